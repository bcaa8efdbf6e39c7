import { CLIENT_CHARTS } from './dashboard.charts.js';
import { CLIENT_CORE } from './dashboard.client-core.js';
import { CLIENT_FLOW } from './dashboard.flow-graph.js';
import { CLIENT_VIEWS } from './dashboard.views.js';

/**
 * Browser code of the dashboard, part 4: selection (kept in the URL's hash,
 * so a view can be linked: a queue, a segment, a run, a flow), the polling
 * loop, the actions and start-up.
 */
const CLIENT_APP = String.raw`
function readHash() {
  var params = new URLSearchParams(location.hash.slice(1));
  state.queue = params.get('queue') || null;
  var segment = params.get('segment');
  state.segment = SEGMENTS.indexOf(segment) >= 0 ? segment : 'ready';
  state.offset = Math.max(0, parseInt(params.get('offset') || '0', 10) || 0);
  state.run = params.get('run') || null;
  state.flow = params.get('flow') || null;
}

function writeHash() {
  var params = new URLSearchParams();
  if (state.queue) params.set('queue', state.queue);
  params.set('segment', state.segment);
  if (state.offset) params.set('offset', String(state.offset));
  if (state.run) params.set('run', state.run);
  if (state.flow) params.set('flow', state.flow);
  history.replaceState(null, '', '#' + params.toString());
}

function selectionKey() { return [state.queue, state.segment, state.offset, state.run, state.flow].join('\n'); }

/* Changes what is shown: the page reflects it at once and fetches its data. */
function select(changes) {
  var queueChanged = changes.queue !== undefined && changes.queue !== state.queue;
  var listChanged = queueChanged || (changes.segment !== undefined && changes.segment !== state.segment) ||
    (changes.offset !== undefined && changes.offset !== state.offset);
  Object.assign(state, changes);
  if (queueChanged) state.metrics = null;
  if (listChanged) state.page = null;
  if (changes.run !== undefined && (!state.record || state.record.id !== state.run)) { state.record = null; state.recordError = null; }
  if (changes.flow !== undefined && (!state.flowData || state.flowData.id !== state.flow)) { state.flowData = null; state.flowError = null; }
  writeHash();
  render();
  refresh();
}

function closeRun() { select({ run: null }); }

function setLive(error) {
  var status = $('status');
  status.classList.toggle('live', !error);
  status.classList.toggle('down', !!error);
  $('status-text').textContent = error
    ? (error.status === 403 ? error.message : 'Disconnected: ' + error.message + ' · retrying')
    : 'Live · updated ' + fmtTimeOfDay(Date.now());
}

/* One poll: the overview, workers and schedules, plus the selected queue's charts and runs, the open run and the open flow. */
async function refresh() {
  if (state.busy) { state.again = true; return; }
  state.busy = true;
  state.again = false;
  clearTimeout(state.timer);
  try {
    var overview = await api('/overview');
    state.skew = overview.now - Date.now();
    state.overview = overview;
    var names = overview.queues.map(function (q) { return q.queue; });
    if (names.length && names.indexOf(state.queue) < 0) {
      state.queue = names[0];
      state.offset = 0;
      writeHash();
    }
    var key = selectionKey();
    var queue = state.queue && names.indexOf(state.queue) >= 0 ? encodeURIComponent(state.queue) : null;
    var results = await Promise.all([
      api('/workers'),
      queue ? api('/queues/' + queue + '/metrics?minutes=60') : null,
      queue ? api('/queues/' + queue + '/runs?segment=' + state.segment + '&offset=' + state.offset + '&limit=' + PAGE_SIZE) : null,
      state.run
        ? api(runPath('', state.run)).then(
          function (record) { return { record: record }; },
          function (error) { if (error.status === 404) return { error: error.message }; throw error; })
        : null,
      api('/schedules'),
      state.flow
        ? api(flowPath(state.flow)).then(
          function (flow) { return { flow: flow }; },
          function (error) { if (error.status === 404) return { error: error.message }; throw error; })
        : null,
    ]);
    state.workers = results[0];
    state.schedules = results[4];
    /* The operator may have switched views while this poll was in flight: its answers belong to the old one. */
    if (key === selectionKey()) {
      state.metrics = results[1];
      state.page = results[2];
      if (results[3]) { state.record = results[3].record || null; state.recordError = results[3].error || null; }
      if (results[5]) { state.flowData = results[5].flow || null; state.flowError = results[5].error || null; }
      if (state.page && state.page.offset > 0 && state.page.offset >= state.page.total) {
        state.offset = Math.max(0, Math.floor((state.page.total - 1) / PAGE_SIZE) * PAGE_SIZE);
        writeHash();
        state.again = true;
      }
    } else {
      state.again = true;
    }
    render();
    setLive(null);
  } catch (error) {
    setLive(error);
  } finally {
    state.busy = false;
    if (state.again) state.timer = setTimeout(refresh, 0);
    else state.timer = setTimeout(refresh, document.hidden ? POLL_MS * 5 : POLL_MS);
  }
}

/*
 * A run's API path, the id in the query: a browser resolves an id of "." or
 * ".." in the path as a path segment, encoded or not, and would ask for another URL.
 */
function runPath(action, id) { return '/runs' + action + '?id=' + encodeURIComponent(id); }

function flowPath(id) { return '/flows?id=' + encodeURIComponent(id); }

async function requeue(id) {
  try {
    var run = await post(runPath('/requeue', id));
    toast('Requeued run ' + shortId(id) + ' (' + run.taskName + '): now ' + run.status + '.');
  } catch (error) {
    toast(error.message, 'error');
  }
  refresh();
}

function dequeue(id) {
  openModal({
    title: 'Dequeue this run?',
    body: 'Run ' + id + ' is removed from its queue with its record; it will not run.',
    confirmLabel: 'Dequeue run',
    danger: true,
    onConfirm: async function () {
      await post(runPath('/dequeue', id));
      toast('Dequeued run ' + shortId(id) + '.');
      if (state.run === id) select({ run: null }); else refresh();
    },
  });
}

function cancelRun(id) {
  openModal({
    title: 'Cancel this run?',
    body: 'Run ' + id + ' ends CANCELLED and is not retried; if it is running, its worker aborts the attempt at its next lease renewal and discards what it returns.',
    confirmLabel: 'Cancel run',
    danger: true,
    onConfirm: async function () {
      var outcome = await post(runPath('/cancel', id));
      toast(outcome.cancelled ? 'Cancelled run ' + shortId(id) + '.' : 'Run ' + shortId(id) + ' was already cancelled.');
      refresh();
    },
  });
}

/* Pauses or resumes a queue at once: both are harmless and undone with one click, so no confirmation. */
async function togglePause(queue, paused) {
  try {
    await post('/queues/' + encodeURIComponent(queue) + (paused ? '/resume' : '/pause'));
    toast(paused ? 'Resumed ' + queue + ': workers claim its runs again.' : 'Paused ' + queue + ': no new run starts; running ones finish.');
  } catch (error) {
    toast(error.message, 'error');
  }
  refresh();
}

function purge(queue, total) {
  openModal({
    title: 'Purge queue ' + queue + '?',
    body: 'This removes every run of ' + queue + ' in every segment (' + fmtInt(total) + ' now, ready and running ones included) ' +
      'with its record. Counters and metrics stay. Type the queue name to confirm.',
    typed: queue,
    confirmLabel: 'Purge queue',
    danger: true,
    onConfirm: async function (typed) {
      // A large queue is purged in chunks: its counts fall on the page meanwhile.
      toast('Purging ' + queue + '…');
      var result = await post('/queues/' + encodeURIComponent(queue) + '/purge', { confirm: typed });
      toast('Purged ' + queue + ': ' + fmtInt(result.removed) + ' runs removed.');
      select({ offset: 0, run: null });
    },
  });
}

function requeueAllRuns(queue, segment, total) {
  var label = SEGMENT_LABELS[segment].toLowerCase();
  openModal({
    title: 'Requeue every ' + label + ' run of ' + queue + '?',
    body: 'The ' + fmtInt(total) + ' ' + label + ' runs of ' + queue + ' go back to READY at their places, keeping their ids, ' +
      'attempts and errors. Runs that end ' + label + ' while this goes on stay ' + label + '.',
    confirmLabel: 'Requeue all',
    onConfirm: async function () {
      // A large segment is requeued in chunks: its count falls on the page meanwhile.
      toast('Requeueing the ' + label + ' runs of ' + queue + '…');
      var result = await post('/queues/' + encodeURIComponent(queue) + '/requeue-all', { segment: segment });
      toast('Requeued ' + fmtInt(result.requeued) + ' ' + label + ' runs of ' + queue + '.');
      select({ offset: 0, run: null });
    },
  });
}

function start() {
  if (readOnly) $('read-only').hidden = false;
  buildTabs();
  $('prev').addEventListener('click', function () { select({ offset: Math.max(0, state.offset - PAGE_SIZE) }); });
  $('next').addEventListener('click', function () { select({ offset: state.offset + PAGE_SIZE }); });
  $('backdrop').addEventListener('click', closeRun);
  $('flow-close').addEventListener('click', closeFlow);
  document.addEventListener('keydown', function (event) {
    if (event.key !== 'Escape') return;
    if (!$('modal').hidden) closeModal(); else if (state.run) closeRun(); else if (state.flow) closeFlow();
  });
  window.addEventListener('hashchange', function () { readHash(); render(); refresh(); });
  window.addEventListener('resize', function () { renderCharts(false); });
  document.addEventListener('visibilitychange', function () { if (!document.hidden) refresh(); });
  setInterval(tickTimes, 1000);
  readHash();
  render();
  refresh();
}

start();
`;

/** The dashboard's whole browser script, inlined in its page (the Content-Security-Policy allows it by hash). */
export const DASHBOARD_SCRIPT = `(function () {\n'use strict';\n${CLIENT_CORE}\n${CLIENT_CHARTS}\n${CLIENT_VIEWS}\n${CLIENT_FLOW}\n${CLIENT_APP}\n})();\n`;
