import { CLOCK_SKEW_WARNING_MS } from '../backend/redis/redis-clock.js';

/**
 * Browser code of the dashboard, part 3: the views. Tables are reconciled row
 * by row (a row is rebuilt only when its data changed), so polling every two
 * seconds never replaces a button under the operator's pointer.
 */
export const CLIENT_VIEWS = String.raw`
/* A worker's clock offset to Redis's, flagged past the threshold at which it logs a warning (no run depends on it). */
function clockSkew(w) {
  if (w.clockOffsetMs === undefined) return null;
  var ms = w.clockOffsetMs, text = 'clock ' + (ms >= 0 ? '+' : '') + fmtInt(ms) + ' ms vs Redis';
  return Math.abs(ms) > ${CLOCK_SKEW_WARNING_MS}
    ? el('div', { class: 'worker-meta skewed', 'data-skewed': '', title: 'This host clock is off: synchronise it (NTP). Runs are unaffected; times it shows and runAfter dates it gives are off by as much.', text: text + ' · synchronise this host clock (NTP)' })
    : el('div', { class: 'worker-meta small muted', text: text });
}

/* Keeps tbody's rows in the order of items, rebuilding only the rows whose signature changed. */
function syncRows(tbody, items, keyOf, sigOf, build) {
  var old = new Map();
  Array.prototype.forEach.call(tbody.children, function (tr) { old.set(tr.tmKey, tr); });
  var previous = null;
  items.forEach(function (item) {
    var key = keyOf(item), sig = sigOf(item), tr = old.get(key);
    if (!tr || tr.tmSig !== sig) {
      var fresh = build(item);
      fresh.tmKey = key;
      fresh.tmSig = sig;
      if (tr) tr.replaceWith(fresh);
      tr = fresh;
    }
    old.delete(key);
    var expected = previous ? previous.nextSibling : tbody.firstChild;
    if (expected !== tr) tbody.insertBefore(tr, expected);
    previous = tr;
  });
  old.forEach(function (tr) { tr.remove(); });
}

function renderHeader() {
  var overview = state.overview;
  if (!overview) return;
  $('alias').textContent = overview.alias;
  $('rates-note').textContent = 'rates over the last ' + overview.windowMinutes + ' min · click a count to list its runs';
}

/* Redis's memory in the header, and the capacity warning as a banner above the queues while a figure is over. */
function renderCapacity() {
  var capacity = state.overview && state.overview.capacity;
  var chip = $('memory');
  chip.hidden = !capacity || capacity.usedBytes === null;
  if (!chip.hidden) {
    $('memory-text').textContent = fmtBytes(capacity.usedBytes) +
      (capacity.maxBytes === null ? ' (no maxmemory)' : ' of ' + fmtBytes(capacity.maxBytes)) +
      ' · projected ' + fmtBytes(capacity.projectedBytes);
    chip.classList.toggle('warn', !!capacity.warning);
  }
  var banner = $('capacity-warning');
  banner.hidden = !capacity || !capacity.warning;
  banner.textContent = capacity && capacity.warning ? capacity.warning : '';
}

function countCell(q, segment) {
  var n = q[segment];
  var cls = 'count' + (n === 0 ? ' zero' : ' c-' + segment);
  return el('td', { class: 'num' }, el('span', {
    class: cls, 'data-count': segment, title: 'List ' + SEGMENT_LABELS[segment].toLowerCase() + ' runs of ' + q.queue,
    text: fmtInt(n),
    onclick: function (event) { event.stopPropagation(); select({ queue: q.queue, segment: segment, offset: 0 }); },
  }));
}

function queueRow(q) {
  var total = SEGMENTS.reduce(function (sum, s) { return sum + q[s]; }, 0);
  return el('tr', { 'data-queue': q.queue, onclick: function () { select({ queue: q.queue, offset: 0 }); } },
    el('td', {}, el('span', { class: 'qname', text: q.queue }), q.paused ? [' ', el('span', {
      class: 'badge s-paused', 'data-paused': '', text: 'PAUSED', title: 'Paused: no worker claims its runs until it is resumed',
    })] : null, q.concurrencyCap != null ? [' ', el('span', {
      class: 'badge', 'data-cap': String(q.concurrencyCap), text: 'CAP ' + q.concurrencyCap,
      title: 'Concurrency cap: at most ' + q.concurrencyCap + ' of its runs leased at once across every worker',
    })] : null, q.rateLimit ? [' ', el('span', {
      class: 'badge', 'data-rate': q.rateLimit.max + '/' + q.rateLimit.perMs,
      text: q.rateLimit.max + '/' + (q.rateLimit.perMs % 1000 === 0 ? q.rateLimit.perMs / 1000 + ' s' : q.rateLimit.perMs + ' ms'),
      title: 'Rate limit: at most ' + q.rateLimit.max + ' starts in any ' + q.rateLimit.perMs + ' ms',
    })] : null),
    SEGMENTS.map(function (segment) { return countCell(q, segment); }),
    el('td', { class: 'num', text: fmtRate(q.ingressPerSecond) }),
    el('td', { class: 'num', text: fmtRate(q.egressPerSecond) }),
    el('td', { class: 'num', 'data-oldest': '' }, q.oldestReadyAgeMs === null ? el('span', { class: 'faint', text: '—' }) : fmtDuration(q.oldestReadyAgeMs)),
    readOnly ? null : el('td', { class: 'act' }, button(q.paused ? 'Resume' : 'Pause', {
      class: 'btn', 'data-action': q.paused ? 'resume' : 'pause',
      title: q.paused ? 'Let workers claim the runs of ' + q.queue + ' again' : 'Stop workers from claiming runs of ' + q.queue + ' (running ones finish)',
      onclick: function (event) { event.stopPropagation(); togglePause(q.queue, q.paused); },
    }), ' ', button('Purge…', {
      class: 'btn danger', 'data-action': 'purge', title: 'Remove every run of ' + q.queue,
      onclick: function (event) { event.stopPropagation(); purge(q.queue, total); },
    })));
}

function renderQueues() {
  var queues = state.overview ? state.overview.queues : [];
  var tbody = $('queues').tBodies[0];
  syncRows(tbody, queues, function (q) { return q.queue; }, function (q) { return JSON.stringify(q); }, queueRow);
  Array.prototype.forEach.call(tbody.rows, function (tr) { tr.classList.toggle('selected', tr.tmKey === state.queue); });
  $('queues-empty').hidden = queues.length > 0;
}

function buildTabs() {
  var tabs = $('segments');
  SEGMENTS.forEach(function (segment) {
    append(tabs, el('button', {
      type: 'button', class: 'tab', role: 'tab', 'data-segment': segment,
      onclick: function () { select({ segment: segment, offset: 0 }); },
    }, el('span', { text: SEGMENT_LABELS[segment] }), el('span', { class: 'pill', text: '0' })));
  });
}

function renderTabs() {
  var q = state.overview && state.overview.queues.find(function (item) { return item.queue === state.queue; });
  Array.prototype.forEach.call($('segments').children, function (tab) {
    var segment = tab.getAttribute('data-segment');
    var active = segment === state.segment;
    tab.classList.toggle('active', active);
    tab.setAttribute('aria-selected', String(active));
    var n = q ? q[segment] : 0;
    tab.lastChild.textContent = fmtInt(n);
    tab.lastChild.classList.toggle('some', n > 0);
  });
  document.querySelectorAll('.runs-queue').forEach(function (node) { node.textContent = state.queue || ''; });
}

function lastError(run) { return run.errors.length ? run.errors[run.errors.length - 1] : null; }

/* The task column grows to fill the row unless another column (an error, a reason) does. */
function taskCell(run, grow) {
  var args = preview(run.args, 60);
  return el('td', { class: grow ? 'grow' : '', title: run.taskName + ' ' + args },
    el('div', { class: 'clip' }, el('span', { class: 'task', text: run.taskName }), el('span', { class: 'args', text: args })));
}

/* Columns per segment: what matters about a run depends on where it is. */
var COLUMNS = {
  ready: [['Priority', 'num', function (r) { return r.priority; }], ['Attempts', 'num', function (r) { return r.attempts; }], ['Enqueued', '', function (r) { return timeEl(r.enqueuedAt); }]],
  deferred: [['Priority', 'num', function (r) { return r.priority; }], ['Attempts', 'num', function (r) { return r.attempts; }], ['Due', '', function (r) { return timeEl(r.runAfter); }]],
  running: [['Attempt', 'num', function (r) { return r.attempts; }], ['Started', '', function (r) { return timeEl(r.lastAttemptedAt); }], ['Worker', 'mono', function (r) { return r.workerIds[r.workerIds.length - 1] || '—'; }]],
  successful: [['Attempts', 'num', function (r) { return r.attempts; }], ['Finished', '', function (r) { return timeEl(r.finishedAt); }], ['Took', 'num', function (r) { return fmtDuration(toMs(r.finishedAt) - toMs(r.lastAttemptedAt)); }]],
  failed: [['Attempts', 'num', function (r) { return r.attempts; }], ['Finished', '', function (r) { return timeEl(r.finishedAt); }], ['Error', 'err grow', function (r) { var e = lastError(r); return e ? e.errorClass + ': ' + e.message : '—'; }]],
  cancelled: [['Attempts', 'num', function (r) { return r.attempts; }], ['Cancelled', '', function (r) { return timeEl(r.finishedAt); }], ['Enqueued', '', function (r) { return timeEl(r.enqueuedAt); }]],
  waiting: [['Priority', 'num', function (r) { return r.priority; }], ['Enqueued', '', function (r) { return timeEl(r.enqueuedAt); }], ['Flow', 'mono', function (r) { return r.flowId || '—'; }]],
  quarantined: [['Attempts', 'num', function (r) { return r.attempts; }], ['Quarantined', '', function (r) { return timeEl(r.quarantine && r.quarantine.at); }], ['Reason', 'grow', function (r) { return r.quarantine ? [el('span', { class: 'badge s-reason', text: r.quarantine.reason }), ' ', el('span', { class: 'muted', text: r.quarantine.message })] : '—'; }]],
};

function growsElsewhere(segment) { return COLUMNS[segment].some(function (column) { return column[1].indexOf('grow') >= 0; }); }

function runActions(run) {
  if (readOnly) return null;
  var id = run.id;
  if (run.status === 'FAILED' || run.status === 'QUARANTINED' || run.status === 'CANCELLED') {
    return button('Requeue', { 'data-action': 'requeue', onclick: function (event) { event.stopPropagation(); requeue(id); } });
  }
  if (run.status === 'READY' || run.status === 'WAITING') {
    return [
      button('Dequeue', { class: 'btn danger', 'data-action': 'dequeue', onclick: function (event) { event.stopPropagation(); dequeue(id); } }),
      ' ',
      button('Cancel', { class: 'btn danger', 'data-action': 'cancel', onclick: function (event) { event.stopPropagation(); cancelRun(id); } }),
    ];
  }
  if (run.status === 'RUNNING') {
    return button('Cancel', { class: 'btn danger', 'data-action': 'cancel', onclick: function (event) { event.stopPropagation(); cancelRun(id); } });
  }
  return null;
}

function runRow(segment, run) {
  return el('tr', { 'data-run-id': run.id, onclick: function () { select({ run: run.id }); } },
    el('td', { class: 'mono', title: run.id, text: shortId(run.id) }),
    taskCell(run, !growsElsewhere(segment)),
    COLUMNS[segment].map(function (column) {
      var value = column[2](run);
      var cell = el('td', { class: column[1], title: typeof value === 'string' ? value : null });
      append(cell, column[1].indexOf('grow') >= 0 ? el('div', { class: 'clip' }, value) : value);
      return cell;
    }),
    readOnly ? null : el('td', { class: 'act' }, runActions(run)));
}

/* The segments whose runs go back to READY with "Requeue all". */
var REQUEUEABLE = ['failed', 'quarantined', 'cancelled'];

function renderRuns() {
  var page = state.page;
  var table = $('runs');
  var segment = page ? page.segment : state.segment;
  if (table.tmSegment !== segment) {
    table.tmSegment = segment;
    clear(table.tHead);
    append(table.tHead, el('tr', {}, el('th', { text: 'Run' }), el('th', { text: 'Task' }),
      COLUMNS[segment].map(function (column) { return el('th', { class: column[1].indexOf('num') >= 0 ? 'num' : '', text: column[0] }); }),
      readOnly ? null : el('th', { class: 'act' })));
  }
  var runs = page ? page.runs : [];
  syncRows(table.tBodies[0], runs, function (r) { return r.id; }, function (r) { return segment + JSON.stringify(r); }, function (r) { return runRow(segment, r); });
  Array.prototype.forEach.call(table.tBodies[0].rows, function (tr) { tr.classList.toggle('selected', tr.tmKey === state.run); });
  var empty = $('runs-empty');
  empty.hidden = !page || runs.length > 0;
  empty.textContent = page ? 'No ' + SEGMENT_LABELS[segment].toLowerCase() + ' runs in ' + page.queue + '.' : '';
  var total = page ? page.total : 0;
  var from = page && runs.length ? page.offset + 1 : 0;
  $('page-info').textContent = page ? fmtInt(from) + '–' + fmtInt(page.offset + runs.length) + ' of ' + fmtInt(total) : '';
  var requeueAll = $('requeue-all');
  requeueAll.hidden = readOnly || !page || total === 0 || REQUEUEABLE.indexOf(segment) < 0;
  requeueAll.title = page ? 'Requeue every ' + SEGMENT_LABELS[segment].toLowerCase() + ' run of ' + page.queue : '';
  requeueAll.onclick = function () { requeueAllRuns(page.queue, segment, total); };
  $('prev').disabled = !page || page.offset === 0;
  $('next').disabled = !page || page.offset + page.limit >= total;
}

function renderWorkers() {
  var data = state.workers;
  var workers = data ? data.workers : [];
  var sig = JSON.stringify(workers);
  $('workers-note').textContent = workers.length === 1 ? '1 live process' : workers.length + ' live processes';
  if (sig === state.workersSig) return;
  state.workersSig = sig;
  var list = clear($('workers'));
  if (!workers.length) {
    append(list, el('div', { class: 'empty', text: 'No live worker on this backend. Start one with runWorker(WorkerModule).' }));
    return;
  }
  workers.forEach(function (w) {
    append(list, el('div', { class: 'worker', 'data-worker': w.id },
      el('div', { class: 'worker-head' }, el('span', { class: 'worker-id', title: w.id, text: w.id }), el('span', { class: 'small muted' }, 'seen ', timeEl(w.seenAt))),
      el('div', { class: 'worker-meta' }, 'queues ', el('b', { text: w.queues.join(', ') })),
      el('div', { class: 'worker-meta' }, 'concurrency ', el('b', { text: w.concurrency }), ' · holds ', el('b', { text: w.held }), ' · done ', el('b', { text: fmtInt(w.done) }), ' · up ', timeEl(w.startedAt, '', 'age')),
      el('div', { class: 'worker-meta' }, w.leases.length === 1 ? '1 lease' : w.leases.length + ' leases'),
      clockSkew(w),
      w.leases.length ? el('ul', { class: 'leases' }, w.leases.map(function (lease) {
        return el('li', { class: 'lease', 'data-lease': lease.id, title: 'Open run ' + lease.id, onclick: function () { select({ queue: lease.queue, segment: 'running', offset: 0, run: lease.id }); } },
          el('div', { class: 'lease-line' }, el('span', { class: 'task', text: lease.taskName }), el('span', { class: 'muted' }, 'expires ', timeEl(lease.deadline))),
          el('div', { class: 'mono', text: lease.queue + ' · ' + lease.id }));
      })) : null));
  });
}

/* Schedules: what fires when (docs/schedules.md), with the last run (a click opens it). */
function renderSchedules() {
  var data = state.schedules;
  var schedules = data ? data.schedules : [];
  var sig = JSON.stringify(schedules);
  $('schedules-note').textContent = schedules.length === 1 ? '1 schedule' : schedules.length + ' schedules';
  $('schedules-empty').hidden = schedules.length > 0;
  if (sig === state.schedulesSig) return;
  state.schedulesSig = sig;
  var body = clear(document.querySelector('#schedules tbody'));
  schedules.forEach(function (s) {
    var when = s.cron ? s.cron + (s.tz && s.tz !== 'UTC' ? ' (' + s.tz + ')' : '') : 'every ' + fmtInt(s.everyMs) + ' ms';
    var next = s.ended ? el('span', { class: 'muted', text: 'ended' }) : toMs(s.nextRunAt) === null ? el('span', { class: 'faint', text: 'planning' }) : timeEl(s.nextRunAt);
    var row = { 'data-schedule': s.id };
    if (s.lastRunId) {
      row.title = 'Open the last run, ' + s.lastRunId;
      row.onclick = function () { select({ queue: s.queue, run: s.lastRunId }); };
    }
    append(body, el('tr', row,
      el('td', { class: 'mono', text: s.id }),
      el('td', { text: s.task }),
      el('td', { text: when }),
      el('td', {}, next),
      el('td', {}, timeEl(s.lastRunAt)),
      el('td', { class: 'num', text: fmtInt(s.runs) }),
      el('td', { class: 'num', text: fmtInt(s.skipped) }),
      el('td', { class: 'muted', text: s.source + (s.overlap === 'skip' ? ' · no overlap' : '') })));
  });
}

function fact(label, value) { return [el('dt', { text: label }), el('dd', {}, value)]; }

function stamp(value) {
  var at = toMs(value);
  if (at === null) return el('span', { class: 'faint', text: '—' });
  return el('span', {}, fmtStamp(at), el('span', { class: 'muted' }, ' · ', timeEl(at)));
}

function section(title, body) { return el('div', { class: 'section' }, el('h3', { text: title }), body); }

function renderRecord(run) {
  var enqueued = toMs(run.enqueuedAt), started = toMs(run.startedAt), due = toMs(run.runAfter);
  var lastAttempt = toMs(run.lastAttemptedAt), finished = toMs(run.finishedAt);
  var actions = [];
  if (!readOnly && (run.status === 'FAILED' || run.status === 'QUARANTINED' || run.status === 'CANCELLED')) {
    actions.push(button('Requeue', { class: 'btn primary', 'data-action': 'requeue', onclick: function () { requeue(run.id); } }));
  }
  if (!readOnly && run.status === 'READY') {
    actions.push(button('Dequeue', { class: 'btn danger', 'data-action': 'dequeue', onclick: function () { dequeue(run.id); } }));
  }
  if (!readOnly && (run.status === 'READY' || run.status === 'RUNNING')) {
    actions.push(button('Cancel', { class: 'btn danger', 'data-action': 'cancel', onclick: function () { cancelRun(run.id); } }));
  }
  var errors = run.errors.slice().reverse();
  return [
    el('div', { class: 'drawer-head' },
      el('div', {}, el('div', { class: 'drawer-title' }, el('h2', { text: run.taskName }), badge(run.status)), el('div', { class: 'mono muted', 'data-field': 'id', text: run.id }),
        run.flowId ? el('a', {
          class: 'flow-link', href: '#flow=' + encodeURIComponent(run.flowId), 'data-flow-link': run.flowId, title: 'Show the flow this run is a node of',
          text: 'Flow: ' + run.flowId, onclick: function (event) { event.preventDefault(); openFlow(run.flowId); },
        }) : null),
      el('div', { class: 'drawer-actions' }, actions, button('×', { class: 'btn ghost icon', title: 'Close (Esc)', 'aria-label': 'Close', onclick: closeRun }))),
    el('div', { class: 'drawer-body' },
      section('Run', el('dl', { class: 'facts' },
        fact('Queue', run.queue), fact('Priority', String(run.priority)), fact('Attempts', String(run.attempts)),
        started !== null ? fact('Waited', fmtDuration(started - Math.max(enqueued, due || 0)) + ' before its first attempt') : null,
        finished !== null && lastAttempt !== null ? fact('Last attempt took', fmtDuration(finished - lastAttempt)) : null)),
      section('Timestamps', el('dl', { class: 'facts' },
        fact('Enqueued', stamp(run.enqueuedAt)), fact('Run after', stamp(run.runAfter)), fact('Started', stamp(run.startedAt)),
        fact('Last attempt', stamp(run.lastAttemptedAt)), fact('Finished', stamp(run.finishedAt)))),
      section('Arguments', el('pre', { class: 'code', 'data-field': 'args', text: pretty(run.args) })),
      run.progress !== undefined ? section('Progress', el('pre', { class: 'code', 'data-field': 'progress', text: pretty(run.progress) })) : null,
      run.status === 'SUCCESSFUL' ? section('Return value', el('pre', { class: 'code', 'data-field': 'return', text: pretty(run.returnValue) })) : null,
      section('Workers', run.workerIds.length
        ? el('dl', { class: 'facts' }, run.workerIds.map(function (id, i) { return fact('Attempt ' + (i + 1), el('span', { class: 'mono', text: id })); }))
        : el('div', { class: 'muted', text: 'Not attempted yet.' })),
      run.logs && run.logs.length ? section('Logs (last ' + run.logs.length + ')', el('pre', { class: 'code', 'data-field': 'logs', text: run.logs.join('\n') })) : null,
      run.quarantine ? section('Quarantine', el('div', { class: 'quarantine', 'data-field': 'quarantine' },
        el('span', { class: 'badge s-reason', text: run.quarantine.reason }), ' ', stamp(run.quarantine.at),
        el('p', { text: run.quarantine.message }),
        el('div', { class: 'small muted', text: 'Stored payload' }), el('pre', { class: 'code', text: run.quarantine.payload }))) : null,
      section('Errors (' + run.errors.length + ')', errors.length
        ? errors.map(function (e) {
          return el('div', { class: 'error-item', 'data-error-attempt': e.attempt },
            el('div', { class: 'error-title' }, el('span', { class: 'muted', text: 'Attempt ' + e.attempt + ' · ' }), el('b', { text: e.errorClass }), ': ', e.message),
            el('pre', { class: 'code stack', text: e.stack || '(no stack)' }));
        })
        : el('div', { class: 'muted', text: 'No attempt of this run failed.' }))),
  ];
}

function renderDetail() {
  var drawer = $('detail');
  var open = !!state.run;
  drawer.hidden = !open;
  $('backdrop').hidden = !open;
  if (!open) { state.recordSig = ''; return; }
  var record = state.record && state.record.id === state.run ? state.record : null;
  var sig = record ? JSON.stringify(record) : state.recordError ? 'error:' + state.recordError : 'loading:' + state.run;
  if (sig === state.recordSig) return;
  state.recordSig = sig;
  clear(drawer);
  if (record) { append(drawer, renderRecord(record)); return; }
  append(drawer, el('div', { class: 'drawer-head' },
    el('div', { class: 'drawer-title' }, el('h2', { class: 'mono', text: state.run })),
    button('×', { class: 'btn ghost icon', title: 'Close (Esc)', 'aria-label': 'Close', onclick: closeRun })),
    el('div', { class: 'drawer-body' }, el('p', { class: state.recordError ? 'err' : 'muted', text: state.recordError || 'Loading…' })));
}

function render() {
  renderHeader();
  renderCapacity();
  renderQueues();
  renderTabs();
  renderRuns();
  renderCharts(false);
  renderWorkers();
  renderSchedules();
  renderFlow();
  renderDetail();
  tickTimes();
}
`;
