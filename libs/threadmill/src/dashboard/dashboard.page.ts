import { createHash } from 'node:crypto';
import { DASHBOARD_SCRIPT } from './dashboard.script.js';
import { DASHBOARD_STYLES } from './dashboard.styles.js';

const hash = (text: string) => `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;

/**
 * The page's Content-Security-Policy: its one inline script and stylesheet
 * (by hash, so nothing injected into the page could run), API calls to its
 * own origin only, and no framing (the buttons cannot be clickjacked).
 */
export const DASHBOARD_CSP = [
  "default-src 'none'",
  `script-src ${hash(DASHBOARD_SCRIPT)}`,
  `style-src ${hash(DASHBOARD_STYLES)}`,
  "connect-src 'self'",
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** What varies between mounts of the page. */
export interface DashboardPageOptions {
  readonly title: string;
  readonly readOnly: boolean;
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => ESCAPES[c]!);

const FAVICON =
  "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 24 24'%3E%3Crect width='24' height='24' " +
  "rx='6' fill='%233763e8'/%3E%3Cpath d='M6 8h12M6 12h8M6 16h10' stroke='white' stroke-width='2.2' " +
  "stroke-linecap='round'/%3E%3C/svg%3E";

const LOGO =
  '<svg width="24" height="24" viewBox="0 0 24 24" aria-hidden="true"><rect class="logo-bg" width="24" height="24" ' +
  'rx="6"/><path class="logo-line" d="M6 8h12M6 12h8M6 16h10"/></svg>';

/**
 * The dashboard: one self-contained HTML page (inline CSS and vanilla JS, no
 * CDN, no build step) that polls the JSON API next to it every two seconds.
 * Options go into `data-` attributes, so the script (and its CSP hash) is the
 * same for every mount.
 */
export function renderDashboardPage({ title, readOnly }: DashboardPageOptions): string {
  const name = escapeHtml(title);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<meta name="robots" content="noindex">
<title>${name}</title>
<link rel="icon" href="${FAVICON}">
<style>${DASHBOARD_STYLES}</style>
</head>
<body data-read-only="${readOnly}">
<header class="top">
  <div class="brand">${LOGO}<h1>${name}</h1>
    <span class="chip">alias <b id="alias">…</b></span>
    <span class="chip warn" id="read-only" hidden>read-only</span>
    <span class="chip" id="memory" title="Redis memory: used, maxmemory, and projected for the results kept" hidden>memory <b id="memory-text"></b></span>
  </div>
  <div class="status" id="status" role="status"><span class="dot"></span><span id="status-text">Connecting…</span></div>
</header>
<main>
  <div class="banner warn" id="capacity-warning" role="alert" hidden></div>
  <section class="card" id="flow-card" aria-labelledby="flow-title" hidden>
    <div class="card-head">
      <h2 id="flow-title">Flow <span class="q mono" id="flow-id"></span></h2>
      <span class="flow-state" id="flow-state"></span>
      <span class="note" id="flow-note"></span>
      <button type="button" class="btn ghost icon" id="flow-close" title="Close the flow (Esc)" aria-label="Close the flow">×</button>
    </div>
    <div class="flow-graph" id="flow-graph"></div>
  </section>
  <section class="card" aria-labelledby="queues-title">
    <div class="card-head"><h2 id="queues-title">Queues</h2><span class="note" id="rates-note"></span></div>
    <div class="table-wrap">
      <table class="grid" id="queues">
        <thead><tr>
          <th>Queue</th><th class="num">Ready</th><th class="num">Deferred</th><th class="num">Running</th>
          <th class="num">Successful</th><th class="num">Failed</th><th class="num">Quarantined</th><th class="num">Cancelled</th>
          <th class="num" title="Flow nodes waiting for their dependencies">Waiting</th>
          <th class="num" title="Runs enqueued per second">In /s</th>
          <th class="num" title="Runs finished (successful or failed) per second">Out /s</th>
          <th class="num" title="How long the longest-waiting ready run has waited">Oldest ready</th>
          ${readOnly ? '' : '<th class="act"></th>'}
        </tr></thead>
        <tbody></tbody>
      </table>
    </div>
    <div class="empty" id="queues-empty" hidden>No queues on this backend yet.</div>
  </section>
  <section class="card" aria-labelledby="schedules-title">
    <div class="card-head"><h2 id="schedules-title">Schedules</h2><span class="note" id="schedules-note"></span></div>
    <div class="table-wrap">
      <table class="grid" id="schedules">
        <thead><tr>
          <th>Schedule</th><th>Task</th><th>When</th><th>Next run</th><th>Last run</th>
          <th class="num">Runs</th><th class="num" title="Slots passed over: catch-up, overlap">Skipped</th><th>Source</th>
        </tr></thead>
        <tbody></tbody>
      </table>
    </div>
    <div class="empty" id="schedules-empty" hidden>No schedules: declare one with @Task({ schedule }) or TaskScheduler.upsert.</div>
  </section>
  <div class="charts">
    <section class="card" aria-labelledby="throughput-title">
      <div class="card-head">
        <h2 id="throughput-title">Throughput <span class="q chart-queue"></span></h2>
        <div class="legend">
          <span><span class="key line k-enqueued"></span>Enqueued</span>
          <span><span class="key k-succeeded"></span>Succeeded</span>
          <span><span class="key k-failed"></span>Failed</span>
        </div>
      </div>
      <div class="card-head note-row"><span class="note" id="throughput-note"></span></div>
      <div class="chart" id="throughput"></div>
    </section>
    <section class="card" aria-labelledby="latency-title">
      <div class="card-head">
        <h2 id="latency-title">Latency <span class="q chart-queue"></span></h2>
        <div class="legend"><span><span class="key k-wait"></span>Average wait, enqueue to start</span></div>
      </div>
      <div class="card-head note-row"><span class="note" id="latency-note"></span></div>
      <div class="chart" id="latency"></div>
    </section>
  </div>
  <div class="lower">
    <section class="card" aria-labelledby="runs-title">
      <div class="card-head"><h2 id="runs-title">Runs <span class="q runs-queue"></span></h2><button type="button" class="btn" id="requeue-all" data-action="requeue-all" hidden>Requeue all…</button></div>
      <nav class="tabs" id="segments" role="tablist" aria-label="Segments"></nav>
      <div class="table-wrap">
        <table class="grid" id="runs"><thead></thead><tbody></tbody></table>
      </div>
      <div class="empty" id="runs-empty" hidden></div>
      <div class="pager">
        <span id="page-info"></span>
        <button type="button" class="btn" id="prev" disabled>‹ Previous</button>
        <button type="button" class="btn" id="next" disabled>Next ›</button>
      </div>
    </section>
    <section class="card" aria-labelledby="workers-title">
      <div class="card-head"><h2 id="workers-title">Workers</h2><span class="note" id="workers-note"></span></div>
      <div class="workers" id="workers"></div>
    </section>
  </div>
</main>
<div class="backdrop" id="backdrop" hidden></div>
<aside class="drawer" id="detail" aria-label="Run detail" hidden></aside>
<div class="modal" id="modal" hidden></div>
<div class="toasts" id="toasts" aria-live="polite"></div>
<script>${DASHBOARD_SCRIPT}</script>
</body>
</html>
`;
}
