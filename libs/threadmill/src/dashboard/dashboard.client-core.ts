/**
 * Browser code of the dashboard, part 1: state, DOM and formatting helpers,
 * the API client, toasts and the confirmation dialog. Plain ES2020 for any
 * current browser, no dependencies; the parts are concatenated into one
 * inline script by `dashboard.page.ts`. Everything that shows stored data
 * goes through `textContent` (never `innerHTML`): run arguments and error
 * messages are untrusted.
 */
export const CLIENT_CORE = String.raw`
/* WAITING flow nodes last: the other columns keep their places. */
var SEGMENTS = ['ready', 'deferred', 'running', 'successful', 'failed', 'quarantined', 'cancelled', 'waiting'];
var SEGMENT_LABELS = {
  ready: 'Ready', deferred: 'Deferred', running: 'Running',
  successful: 'Successful', failed: 'Failed', quarantined: 'Quarantined', cancelled: 'Cancelled', waiting: 'Waiting',
};
var POLL_MS = 2000;
var PAGE_SIZE = 25;
/* The API lives under the page's own URL, so a global prefix or any mount path works. */
var base = location.pathname.replace(/\/+$/, '');
var readOnly = document.body.getAttribute('data-read-only') === 'true';
var state = {
  queue: null, segment: 'ready', offset: 0, run: null, flow: null,
  overview: null, page: null, record: null, recordError: null, metrics: null, workers: null, flowData: null, flowError: null,
  skew: 0, timer: 0, busy: false, again: false, chartWidth: 0, chartSig: '', workersSig: '', recordSig: '', flowSig: '',
};

function $(id) { return document.getElementById(id); }

/* Appends each child (a node, text, or an array of them; null, undefined and false are skipped). */
function append(node) {
  for (var i = 1; i < arguments.length; i++) {
    var child = arguments[i];
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) child.forEach(function (c) { append(node, c); });
    else node.appendChild(typeof child === 'object' ? child : document.createTextNode(String(child)));
  }
  return node;
}

function setAttrs(node, attrs) {
  Object.keys(attrs || {}).forEach(function (key) {
    var value = attrs[key];
    if (value === undefined || value === null || value === false) return;
    if (key === 'text') node.textContent = String(value);
    else if (key.slice(0, 2) === 'on') node.addEventListener(key.slice(2), value);
    else node.setAttribute(key === 'className' ? 'class' : key, value === true ? '' : String(value));
  });
  return node;
}

function el(tag, attrs) {
  var node = setAttrs(document.createElement(tag), attrs);
  for (var i = 2; i < arguments.length; i++) append(node, arguments[i]);
  return node;
}

function svgEl(tag, attrs) {
  var node = setAttrs(document.createElementNS('http://www.w3.org/2000/svg', tag), attrs);
  for (var i = 2; i < arguments.length; i++) append(node, arguments[i]);
  return node;
}

function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); return node; }

function now() { return Date.now() + state.skew; }

function toMs(value) {
  if (value === null || value === undefined) return null;
  var ms = typeof value === 'number' ? value : Date.parse(value);
  return isNaN(ms) ? null : ms;
}

function pad(n, width) { return String(n).padStart(width || 2, '0'); }

function fmtInt(n) { return Math.round(Number(n) || 0).toLocaleString('en-US'); }

function fmtRate(r) {
  if (!r) return '0';
  if (r < 0.1) return r.toFixed(2);
  if (r < 10) return r.toFixed(1);
  return fmtInt(r);
}

/* Bytes in powers of 1024, as Redis's used_memory_human and the capacity warning print them. */
function fmtBytes(bytes) {
  var units = ['B', 'KB', 'MB', 'GB', 'TB'];
  var unit = 0;
  while (bytes >= 1024 && unit < units.length - 1) { bytes /= 1024; unit++; }
  return unit === 0 ? Math.round(bytes) + ' B' : bytes.toFixed(1) + ' ' + units[unit];
}

function fmtCompact(n) {
  if (n >= 1e6) return Number((n / 1e6).toFixed(1)) + 'M';
  if (n >= 1e4) return Number((n / 1e3).toFixed(0)) + 'k';
  if (n >= 1e3) return Number((n / 1e3).toFixed(1)) + 'k';
  return String(Number(n.toFixed(2)));
}

/* A precise duration: waits, run times, chart values. */
function fmtDuration(ms) {
  if (ms === null || ms === undefined || isNaN(ms)) return '—';
  if (ms < 1000) return Math.round(ms) + ' ms';
  if (ms < 60000) return Number((ms / 1000).toFixed(ms < 10000 ? 2 : 1)) + ' s';
  if (ms < 3600000) return Math.floor(ms / 60000) + ' min ' + Math.floor((ms % 60000) / 1000) + ' s';
  if (ms < 86400000) return Math.floor(ms / 3600000) + ' h ' + Math.floor((ms % 3600000) / 60000) + ' min';
  return Math.floor(ms / 86400000) + ' d ' + Math.floor((ms % 86400000) / 3600000) + ' h';
}

/* A coarse age, so relative times do not flicker every second once they are long. */
function fmtAge(ms) {
  if (ms < 1000) return 'now';
  if (ms < 60000) return Math.floor(ms / 1000) + ' s';
  if (ms < 3600000) return Math.floor(ms / 60000) + ' min';
  if (ms < 86400000) return Math.floor(ms / 3600000) + ' h ' + Math.floor((ms % 3600000) / 60000) + ' min';
  return Math.floor(ms / 86400000) + ' d ' + Math.floor((ms % 86400000) / 3600000) + ' h';
}

function fmtClock(at) { var d = new Date(at); return pad(d.getHours()) + ':' + pad(d.getMinutes()); }

function fmtStamp(at) {
  var d = new Date(at);
  return d.getFullYear() + '-' + pad(d.getMonth() + 1) + '-' + pad(d.getDate()) + ' ' + pad(d.getHours()) + ':' +
    pad(d.getMinutes()) + ':' + pad(d.getSeconds()) + '.' + pad(d.getMilliseconds(), 3);
}

function relText(at, mode) {
  var diff = now() - at;
  if (mode === 'age') return fmtAge(Math.max(0, diff));
  if (Math.abs(diff) < 1000) return 'now';
  return diff > 0 ? fmtAge(diff) + ' ago' : 'in ' + fmtAge(-diff);
}

/*
 * A relative time ("3 min ago", "in 20 s", or with mode 'age' just "3 min")
 * kept current by tickTimes(), with the exact time as its tooltip.
 */
function timeEl(value, empty, mode) {
  var at = toMs(value);
  if (at === null) return el('span', { class: 'faint', text: empty || '—' });
  return el('time', { 'data-at': at, 'data-mode': mode, datetime: new Date(at).toISOString(), title: fmtStamp(at), text: relText(at, mode) });
}

function tickTimes() {
  var nodes = document.querySelectorAll('[data-at]');
  for (var i = 0; i < nodes.length; i++) {
    nodes[i].textContent = relText(Number(nodes[i].getAttribute('data-at')), nodes[i].getAttribute('data-mode'));
  }
}

function fmtTimeOfDay(at) { var d = new Date(at); return pad(d.getHours()) + ':' + pad(d.getMinutes()) + ':' + pad(d.getSeconds()); }

/* A ULID starts with its timestamp, shared by runs enqueued together: its random tail tells them apart. */
function shortId(id) { return id.length > 12 ? '…' + id.slice(-10) : id; }

function preview(value, max) {
  var text;
  try { text = JSON.stringify(value); } catch (e) { text = String(value); }
  if (text === undefined) text = 'undefined';
  return text.length > max ? text.slice(0, max - 1) + '…' : text;
}

function pretty(value) {
  if (value === undefined) return '(none)';
  try { return JSON.stringify(value, null, 2); } catch (e) { return String(value); }
}

function badge(status) { return el('span', { class: 'badge s-' + status, text: status }); }

function button(label, attrs) {
  return el('button', Object.assign({ type: 'button', class: 'btn', text: label }, attrs || {}));
}

async function api(path, init) {
  var response = await fetch(base + '/api' + path, Object.assign({
    headers: { accept: 'application/json' }, credentials: 'same-origin', cache: 'no-store',
  }, init || {}));
  var text = await response.text();
  var body = null;
  try { body = text ? JSON.parse(text) : null; } catch (e) { body = null; }
  if (!response.ok) {
    var message = body && body.message ? [].concat(body.message).join('; ') : 'HTTP ' + response.status + ' from ' + path;
    var error = new Error(message);
    error.status = response.status;
    throw error;
  }
  return body;
}

function post(path, body) {
  return api(path, {
    method: 'POST',
    headers: { accept: 'application/json', 'content-type': 'application/json' },
    body: JSON.stringify(body || {}),
  });
}

function toast(message, kind) {
  var node = el('div', { class: 'toast ' + (kind || ''), role: kind === 'error' ? 'alert' : 'status', text: message });
  $('toasts').appendChild(node);
  setTimeout(function () { node.remove(); }, kind === 'error' ? 9000 : 4000);
}

function closeModal() { clear($('modal')).hidden = true; }

/*
 * A confirmation dialog. With typed, the confirm button stays disabled until
 * the operator types that exact text (the queue name before a purge).
 */
function openModal(options) {
  var modal = clear($('modal'));
  var input = options.typed
    ? el('input', { class: 'input', type: 'text', autocomplete: 'off', spellcheck: 'false', 'aria-label': 'Type ' + options.typed + ' to confirm', placeholder: options.typed })
    : null;
  var confirm = button(options.confirmLabel, { class: 'btn ' + (options.danger ? 'danger-solid' : 'primary'), 'data-action': 'confirm' });
  var failure = el('div', { class: 'modal-error', role: 'alert', hidden: true });
  if (input) {
    confirm.disabled = true;
    input.addEventListener('input', function () { confirm.disabled = input.value !== options.typed; });
    input.addEventListener('keydown', function (event) { if (event.key === 'Enter' && !confirm.disabled) confirm.click(); });
  }
  confirm.addEventListener('click', async function () {
    confirm.disabled = true;
    try {
      await options.onConfirm(input ? input.value : undefined);
      closeModal();
    } catch (error) {
      failure.textContent = error.message;
      failure.hidden = false;
      confirm.disabled = input ? input.value !== options.typed : false;
    }
  });
  append(modal, el('div', { class: 'modal-box', role: 'dialog', 'aria-modal': 'true', 'aria-labelledby': 'modal-title' },
    el('h3', { id: 'modal-title', text: options.title }),
    el('p', { text: options.body }),
    input,
    failure,
    el('div', { class: 'modal-actions' }, button('Cancel', { onclick: closeModal }), confirm)));
  modal.hidden = false;
  (input || confirm).focus();
}
`;
