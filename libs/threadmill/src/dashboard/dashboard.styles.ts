/**
 * The dashboard's stylesheet, inlined in its page (the Content-Security-Policy
 * allows exactly this text by its hash). Light and dark follow
 * `prefers-color-scheme`; every colour is a custom property.
 */
export const DASHBOARD_STYLES = String.raw`
:root {
  color-scheme: light dark;
  --bg: #f4f5f7; --surface: #ffffff; --surface-2: #f8f9fb; --border: #e3e6eb; --border-strong: #d0d5dd;
  --text: #1b2230; --muted: #5f6b7d; --faint: #8d97a6;
  --accent: #3763e8; --accent-soft: rgba(55, 99, 232, 0.09);
  --green: #14945a; --red: #dc3f45; --amber: #c26a06; --purple: #8648c4; --cyan: #0a86a8; --slate: #64748b;
  --shadow: 0 1px 2px rgba(16, 24, 40, 0.05), 0 1px 3px rgba(16, 24, 40, 0.06);
  --overlay: rgba(15, 20, 30, 0.28);
  --mono: ui-monospace, 'SFMono-Regular', 'JetBrains Mono', Menlo, Consolas, 'Liberation Mono', monospace;
}
@media (prefers-color-scheme: dark) {
  :root {
    --bg: #0c0f14; --surface: #141920; --surface-2: #192029; --border: #242c37; --border-strong: #334050;
    --text: #e4e8ee; --muted: #9aa5b4; --faint: #6c7788;
    --accent: #7199ff; --accent-soft: rgba(113, 153, 255, 0.13);
    --green: #3fcf8e; --red: #ff6b6f; --amber: #f1a33b; --purple: #b793f6; --cyan: #3cc3ef; --slate: #94a3b8;
    --shadow: none; --overlay: rgba(0, 0, 0, 0.5);
  }
}
* { box-sizing: border-box; }
html, body { margin: 0; }
body {
  background: var(--bg); color: var(--text); -webkit-font-smoothing: antialiased;
  font: 13px/1.45 system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif;
}
[hidden] { display: none !important; }
button { font: inherit; color: inherit; }
.mono { font-family: var(--mono); font-size: 12px; }
.muted { color: var(--muted); }
.faint { color: var(--faint); }
.small { font-size: 11.5px; }
header.top {
  position: sticky; top: 0; z-index: 5; display: flex; align-items: center; justify-content: space-between;
  gap: 16px; padding: 10px 20px; background: var(--surface); border-bottom: 1px solid var(--border);
}
.brand { display: flex; align-items: center; gap: 10px; min-width: 0; }
.brand h1 { font-size: 15px; margin: 0; font-weight: 650; letter-spacing: -0.01em; white-space: nowrap; }
.logo-bg { fill: var(--accent); }
.logo-line { stroke: #fff; stroke-width: 2.2; stroke-linecap: round; fill: none; }
.chip {
  font-size: 11.5px; padding: 1px 8px; border-radius: 999px; background: var(--surface-2);
  border: 1px solid var(--border); color: var(--muted); white-space: nowrap;
}
.chip b { color: var(--text); font-weight: 550; }
.chip.warn { color: var(--amber); border-color: color-mix(in srgb, var(--amber) 35%, var(--border)); }
.banner {
  padding: 10px 14px; border-radius: 10px; border: 1px solid var(--border); background: var(--surface);
  line-height: 1.5;
}
.banner.warn {
  color: var(--amber); border-color: color-mix(in srgb, var(--amber) 45%, var(--border));
  background: color-mix(in srgb, var(--amber) 8%, var(--surface));
}
.status { display: flex; align-items: center; gap: 8px; color: var(--muted); font-size: 12px; white-space: nowrap; }
.dot { width: 8px; height: 8px; border-radius: 50%; background: var(--faint); }
.status.live .dot { background: var(--green); box-shadow: 0 0 0 3px color-mix(in srgb, var(--green) 22%, transparent); }
.status.down { color: var(--red); }
.status.down .dot { background: var(--red); }
main { padding: 16px 20px 28px; display: grid; gap: 16px; max-width: 1680px; margin: 0 auto; }
.card {
  background: var(--surface); border: 1px solid var(--border); border-radius: 10px; box-shadow: var(--shadow);
  min-width: 0; overflow: hidden;
}
.card-head { display: flex; align-items: baseline; justify-content: space-between; gap: 12px; padding: 12px 16px 8px; }
.card-head h2 { font-size: 13px; margin: 0; font-weight: 600; white-space: nowrap; }
.card-head h2 .q { color: var(--accent); font-weight: 600; }
.card-head.note-row { padding: 0 16px 2px; }
.card-head .note { color: var(--muted); font-size: 12px; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.charts { display: grid; grid-template-columns: 1fr 1fr; gap: 16px; }
.lower { display: grid; grid-template-columns: minmax(0, 1fr) 340px; gap: 16px; align-items: start; }
@media (max-width: 1100px) { .charts, .lower { grid-template-columns: minmax(0, 1fr); } }
.table-wrap { overflow-x: auto; }
table.grid { width: 100%; border-collapse: collapse; }
.grid th {
  text-align: left; font-weight: 500; color: var(--muted); font-size: 11.5px; padding: 6px 12px;
  border-top: 1px solid var(--border); border-bottom: 1px solid var(--border); background: var(--surface-2);
  white-space: nowrap;
}
.grid td { padding: 7px 12px; border-bottom: 1px solid var(--border); white-space: nowrap; vertical-align: middle; }
.grid tbody tr:last-child td { border-bottom: 0; }
.grid tbody tr { cursor: pointer; }
.grid tbody tr:hover { background: var(--surface-2); }
.grid tbody tr.selected { background: var(--accent-soft); }
.grid tbody tr.selected td:first-child { box-shadow: inset 3px 0 0 var(--accent); }
.grid th.num, .grid td.num { text-align: right; font-variant-numeric: tabular-nums; }
.grid td.act, .grid th.act { text-align: right; width: 1%; }
.qname { font-weight: 600; }
.count { display: inline-block; min-width: 2.2em; padding: 1px 6px; border-radius: 5px; }
.count:hover { background: var(--accent-soft); }
.count.zero { color: var(--faint); }
.count.c-running { color: var(--cyan); }
.count.c-failed { color: var(--red); font-weight: 600; }
.count.c-quarantined { color: var(--purple); font-weight: 600; }
.task { font-weight: 550; }
.args { color: var(--muted); font-family: var(--mono); font-size: 11.5px; margin-left: 6px; }
.clip { max-width: 250px; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
/* The growing column takes the row's spare width and truncates within it instead of widening the table. */
.grid td.grow { width: 100%; max-width: 0; }
.grid td.grow .clip { max-width: none; }
.err { color: var(--red); }
.badge {
  --c: var(--slate); display: inline-block; font-size: 10.5px; font-weight: 650; letter-spacing: 0.03em;
  padding: 1px 7px; border-radius: 999px; color: var(--c); background: color-mix(in srgb, var(--c) 13%, transparent);
  white-space: nowrap;
}
.s-READY { --c: var(--accent); } .s-RUNNING { --c: var(--cyan); } .s-SUCCESSFUL { --c: var(--green); }
.s-CANCELLED { --c: var(--muted); } .s-FAILED { --c: var(--red); } .s-QUARANTINED { --c: var(--purple); } .s-reason { --c: var(--purple); }
.s-paused { --c: var(--amber); }
.s-WAITING, .s-STAGING { --c: var(--slate); } .s-UNKNOWN { --c: var(--faint); }
.btn {
  border: 1px solid var(--border-strong); background: var(--surface); border-radius: 6px; padding: 3px 10px;
  font-size: 12px; cursor: pointer; white-space: nowrap;
}
.btn:hover { background: var(--surface-2); }
.btn:disabled { opacity: 0.45; cursor: default; }
.btn.primary { background: var(--accent); border-color: var(--accent); color: #fff; }
.btn.primary:hover { filter: brightness(1.08); }
.btn.danger { color: var(--red); border-color: color-mix(in srgb, var(--red) 40%, var(--border)); }
.grid .btn { color: var(--muted); border-color: var(--border); background: transparent; }
.grid .btn:hover { color: var(--text); border-color: var(--border-strong); background: var(--surface); }
.grid .btn.danger:hover { color: var(--red); border-color: color-mix(in srgb, var(--red) 45%, var(--border)); }
.btn.danger-solid { background: var(--red); border-color: var(--red); color: #fff; }
.btn.ghost { border-color: transparent; background: transparent; color: var(--muted); }
.btn.icon { font-size: 18px; line-height: 1; padding: 2px 8px; }
.tabs { display: flex; gap: 2px; padding: 0 10px; border-top: 1px solid var(--border); overflow-x: auto; }
.tab {
  border: 0; background: none; padding: 9px 10px 8px; cursor: pointer; color: var(--muted);
  border-bottom: 2px solid transparent; display: flex; gap: 6px; align-items: center; white-space: nowrap;
}
.tab:hover { color: var(--text); }
.tab.active { color: var(--text); border-bottom-color: var(--accent); font-weight: 550; }
.pill { font-size: 11px; padding: 0 6px; border-radius: 999px; background: var(--surface-2); border: 1px solid var(--border); color: var(--muted); font-variant-numeric: tabular-nums; }
.tab[data-segment='failed'] .pill.some { color: var(--red); border-color: color-mix(in srgb, var(--red) 35%, var(--border)); }
.tab[data-segment='quarantined'] .pill.some { color: var(--purple); border-color: color-mix(in srgb, var(--purple) 35%, var(--border)); }
.empty { padding: 28px 16px; text-align: center; color: var(--muted); }
.pager { display: flex; justify-content: flex-end; align-items: center; gap: 8px; padding: 8px 12px; border-top: 1px solid var(--border); color: var(--muted); font-size: 12px; }
.chart { position: relative; padding: 0 8px 6px; min-height: 170px; }
.chart svg { display: block; }
.legend { display: flex; gap: 12px; font-size: 11.5px; color: var(--muted); white-space: nowrap; }
.key { display: inline-block; width: 9px; height: 9px; border-radius: 2px; margin-right: 5px; vertical-align: -1px; }
.key.line { height: 2px; border-radius: 1px; vertical-align: 3px; width: 12px; }
.k-enqueued { background: var(--accent); } .k-succeeded { background: var(--green); }
.k-failed { background: var(--red); } .k-wait { background: var(--amber); }
.gridline { stroke: var(--border); stroke-width: 1; }
.axis-line { stroke: var(--border-strong); stroke-width: 1; }
.axis-label { fill: var(--faint); font-size: 10.5px; font-family: inherit; }
.bar-succeeded { fill: color-mix(in srgb, var(--green) 70%, transparent); }
.bar-failed { fill: var(--red); }
.line-enqueued { stroke: var(--accent); stroke-width: 1.8; fill: none; stroke-linejoin: round; }
.dot-enqueued { fill: var(--accent); }
.line-wait { stroke: var(--amber); stroke-width: 1.8; fill: none; stroke-linejoin: round; }
.area-wait { fill: color-mix(in srgb, var(--amber) 15%, transparent); }
.dot-wait { fill: var(--amber); }
rect.partial { opacity: 0.5; }
path.partial { stroke-dasharray: 3 2.5; }
.guide { stroke: var(--muted); stroke-width: 1; stroke-dasharray: 3 3; }
.hover-zone { fill: transparent; }
.tip {
  position: absolute; pointer-events: none; background: var(--surface); border: 1px solid var(--border-strong);
  border-radius: 7px; padding: 6px 9px; font-size: 11.5px; white-space: nowrap; box-shadow: 0 4px 14px rgba(0, 0, 0, 0.12); z-index: 2;
}
.tip b { display: block; margin-bottom: 2px; }
.workers { padding: 0 12px 12px; display: grid; gap: 10px; }
.worker { border: 1px solid var(--border); border-radius: 8px; padding: 9px 11px; background: var(--surface-2); }
.worker-head { display: flex; justify-content: space-between; gap: 8px; align-items: baseline; }
.worker-id { font-family: var(--mono); font-size: 12px; font-weight: 600; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.worker-meta { color: var(--muted); font-size: 11.5px; margin-top: 3px; }
.worker-meta b { color: var(--text); font-weight: 550; }
.worker-meta.skewed { color: var(--amber); font-weight: 550; }
.leases { margin: 7px 0 0; padding: 0; list-style: none; display: grid; gap: 3px; }
.lease { font-size: 11.5px; cursor: pointer; padding: 3px 6px; border-radius: 5px; border-left: 2px solid var(--cyan); background: var(--surface); }
.lease:hover { background: var(--accent-soft); }
.lease-line { display: flex; justify-content: space-between; gap: 8px; white-space: nowrap; }
.lease .mono { font-size: 10.5px; color: var(--faint); overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
#flow-card .card-head { justify-content: flex-start; align-items: center; }
#flow-card .note { flex: 1; }
.flow-state { display: flex; gap: 4px; align-items: center; font-size: 12px; white-space: nowrap; }
.flow-graph { overflow: auto; max-height: 70vh; border-top: 1px solid var(--border); }
.flow-canvas { position: relative; }
.flow-edges { position: absolute; left: 0; top: 0; }
.flow-edge { fill: none; stroke: var(--faint); stroke-width: 1.5; }
.flow-edge.e-ignore { stroke-dasharray: 6 4; }
.flow-edge.e-continue { stroke-dasharray: 2 3; }
.flow-edge.e-remove { stroke-dasharray: 6 4; opacity: 0.55; }
.flow-arrow { fill: var(--faint); }
.flow-node {
  position: absolute; box-sizing: border-box; display: flex; flex-direction: column; justify-content: center; gap: 3px;
  padding: 6px 10px; border-radius: 8px; cursor: pointer; color: var(--text); font: inherit; text-align: left;
  background: color-mix(in srgb, var(--c) 7%, var(--surface)); border: 1px solid color-mix(in srgb, var(--c) 40%, var(--border));
  border-left: 4px solid var(--c);
}
.flow-node:hover { background: color-mix(in srgb, var(--c) 14%, var(--surface)); }
.flow-node.selected { box-shadow: 0 0 0 2px var(--accent); }
.flow-node:focus-visible { outline: 2px solid var(--accent); outline-offset: 1px; }
.flow-node-head { display: flex; justify-content: space-between; align-items: center; gap: 6px; min-width: 0; }
.flow-node-name { font-weight: 600; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.flow-node-task { font-family: var(--mono); font-size: 11px; color: var(--muted); overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.flow-link { display: inline-block; margin-top: 4px; font-size: 12px; color: var(--accent); text-decoration: none; }
.flow-link:hover { text-decoration: underline; }
.backdrop { position: fixed; inset: 0; background: var(--overlay); z-index: 20; }
.drawer {
  position: fixed; top: 0; right: 0; bottom: 0; width: min(680px, 100vw); background: var(--surface);
  border-left: 1px solid var(--border); box-shadow: -8px 0 30px rgba(0, 0, 0, 0.14); z-index: 21; overflow-y: auto;
}
.drawer-head {
  position: sticky; top: 0; background: var(--surface); border-bottom: 1px solid var(--border); padding: 14px 18px;
  display: flex; justify-content: space-between; gap: 12px; align-items: flex-start; z-index: 1;
}
.drawer-title { display: flex; gap: 10px; align-items: center; }
.drawer-title h2 { margin: 0; font-size: 16px; font-weight: 650; word-break: break-all; }
.drawer-actions { display: flex; gap: 6px; align-items: center; }
.drawer-body { padding: 4px 18px 28px; }
.section h3 { font-size: 11.5px; text-transform: uppercase; letter-spacing: 0.06em; color: var(--muted); margin: 18px 0 8px; font-weight: 600; }
dl.facts { display: grid; grid-template-columns: 130px 1fr; gap: 5px 12px; margin: 0; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; min-width: 0; overflow-wrap: anywhere; }
pre.code {
  margin: 0; padding: 10px 12px; background: var(--surface-2); border: 1px solid var(--border); border-radius: 7px;
  font-family: var(--mono); font-size: 11.5px; line-height: 1.5; overflow: auto; max-height: 320px; white-space: pre;
}
.error-item { border: 1px solid color-mix(in srgb, var(--red) 30%, var(--border)); border-radius: 8px; padding: 10px 12px; margin-bottom: 10px; }
.error-item .error-title { margin-bottom: 8px; overflow-wrap: anywhere; }
.error-item .error-title b { color: var(--red); }
.quarantine { border: 1px solid color-mix(in srgb, var(--purple) 35%, var(--border)); border-radius: 8px; padding: 10px 12px; }
.quarantine p { margin: 6px 0 10px; }
.modal { position: fixed; inset: 0; display: grid; place-items: center; background: var(--overlay); z-index: 30; }
.modal-box {
  width: min(460px, calc(100vw - 32px)); background: var(--surface); border: 1px solid var(--border); border-radius: 12px;
  padding: 18px 20px; box-shadow: 0 20px 50px rgba(0, 0, 0, 0.25);
}
.modal-box h3 { margin: 0 0 8px; font-size: 15px; }
.modal-box p { margin: 0 0 12px; color: var(--muted); }
.input {
  width: 100%; padding: 7px 10px; border-radius: 7px; border: 1px solid var(--border-strong); background: var(--surface-2);
  color: var(--text); font: 13px var(--mono);
}
.input:focus, .btn:focus-visible, .tab:focus-visible { outline: 2px solid var(--accent); outline-offset: 1px; }
.modal-error { color: var(--red); margin-top: 10px; }
.modal-actions { display: flex; justify-content: flex-end; gap: 8px; margin-top: 16px; }
.toasts { position: fixed; right: 20px; bottom: 20px; display: grid; gap: 8px; z-index: 40; }
.toast {
  background: var(--surface); border: 1px solid var(--border-strong); border-left: 3px solid var(--green); border-radius: 8px;
  padding: 9px 12px; max-width: 420px; box-shadow: 0 8px 24px rgba(0, 0, 0, 0.15);
}
.toast.error { border-left-color: var(--red); }
`;
