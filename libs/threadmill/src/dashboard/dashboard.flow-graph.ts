/**
 * Browser code of the dashboard, beside the views of part 3: a flow drawn as a graph
 * (`api/flows/:id`). Nodes stand in columns by depth (a node's column is one
 * past its deepest dependency's), each coloured by its run's status; an edge
 * is a curve from a dependency to its dependent, drawn by its failure policy.
 * A click on a node opens its run's detail.
 */
export const CLIENT_FLOW = String.raw`
var FLOW_NODE_W = 196, FLOW_NODE_H = 54, FLOW_COL_GAP = 64, FLOW_ROW_GAP = 14, FLOW_PAD = 14;

/* Where each node of flow sits: columns by depth, rows in the API's order (by id within a depth). */
function flowLayout(flow) {
  var rows = [], at = {};
  flow.nodes.forEach(function (node) {
    var row = rows[node.depth] || 0;
    rows[node.depth] = row + 1;
    at[node.id] = { x: FLOW_PAD + node.depth * (FLOW_NODE_W + FLOW_COL_GAP), y: FLOW_PAD + row * (FLOW_NODE_H + FLOW_ROW_GAP) };
  });
  var tallest = rows.reduce(function (most, n) { return Math.max(most, n || 0); }, 0);
  return {
    at: at,
    width: 2 * FLOW_PAD + rows.length * FLOW_NODE_W + Math.max(0, rows.length - 1) * FLOW_COL_GAP,
    height: 2 * FLOW_PAD + tallest * FLOW_NODE_H + Math.max(0, tallest - 1) * FLOW_ROW_GAP,
  };
}

function flowEdges(flow, layout) {
  var svg = svgEl('svg', { class: 'flow-edges', width: layout.width, height: layout.height, viewBox: '0 0 ' + layout.width + ' ' + layout.height, 'aria-hidden': 'true' },
    svgEl('defs', {}, svgEl('marker', { id: 'flow-arrow', viewBox: '0 0 8 8', refX: 7, refY: 4, markerWidth: 7, markerHeight: 7, orient: 'auto' },
      svgEl('path', { d: 'M0,0 L8,4 L0,8 z', class: 'flow-arrow' }))));
  flow.nodes.forEach(function (node) {
    var to = layout.at[node.id];
    node.after.forEach(function (dependency) {
      var from = layout.at[dependency.id];
      if (!from) return;
      var x1 = from.x + FLOW_NODE_W, y1 = from.y + FLOW_NODE_H / 2, x2 = to.x - 2, y2 = to.y + FLOW_NODE_H / 2;
      var bend = Math.max(24, (x2 - x1) / 2);
      append(svg, svgEl('path', {
        class: 'flow-edge e-' + dependency.onFailure, 'data-edge': dependency.name + '>' + node.name, 'marker-end': 'url(#flow-arrow)',
        d: 'M' + x1 + ',' + y1 + ' C' + (x1 + bend) + ',' + y1 + ' ' + (x2 - bend) + ',' + y2 + ' ' + x2 + ',' + y2,
      }, svgEl('title', { text: dependency.name + ' → ' + node.name + ' (onFailure: ' + dependency.onFailure + ')' })));
    });
  });
  return svg;
}

function flowNode(node, at) {
  var status = node.status || 'UNKNOWN';
  var tip = node.name + ' · ' + status + ' · ' + (node.task || 'run record gone') + ' on ' + node.queue +
    (node.attempts ? ' · ' + node.attempts + (node.attempts === 1 ? ' attempt' : ' attempts') : '') + '\nOpen run ' + node.id;
  var box = button('', {
    class: 'flow-node s-' + status + (state.run === node.id ? ' selected' : ''), 'data-flow-node': node.name, 'data-run-id': node.id,
    'data-status': status, title: tip, onclick: function () { select({ run: node.id }); },
  });
  append(box, el('span', { class: 'flow-node-head' }, el('span', { class: 'flow-node-name', text: node.name }), badge(status)),
    el('span', { class: 'flow-node-task', text: node.task || (node.live ? '' : 'run record gone') }));
  box.style.left = at.x + 'px';
  box.style.top = at.y + 'px';
  box.style.width = FLOW_NODE_W + 'px';
  box.style.height = FLOW_NODE_H + 'px';
  return box;
}

function flowSummary(flow) {
  var counts = Object.keys(flow.counts).map(function (status) { return fmtInt(flow.counts[status]) + ' ' + status.toLowerCase(); });
  return [fmtInt(flow.nodes.length) + (flow.nodes.length === 1 ? ' node' : ' nodes'), fmtInt(flow.edges) + (flow.edges === 1 ? ' edge' : ' edges')]
    .concat(counts).join(' · ');
}

/* The flow card: hidden without a flow in the hash; rebuilt only when the flow or the open run changed. */
function renderFlow() {
  var card = $('flow-card');
  card.hidden = !state.flow;
  if (!state.flow) { state.flowSig = ''; return; }
  var flow = state.flowData && state.flowData.id === state.flow ? state.flowData : null;
  var sig = flow ? JSON.stringify(flow) + '\n' + state.run : state.flowError ? 'error:' + state.flowError : 'loading:' + state.flow;
  if (sig === state.flowSig) return;
  state.flowSig = sig;
  $('flow-id').textContent = state.flow;
  var head = clear($('flow-state'));
  var graph = clear($('flow-graph'));
  if (!flow) {
    $('flow-note').textContent = '';
    append(graph, el('div', { class: 'empty' + (state.flowError ? ' err' : ''), text: state.flowError || 'Loading…' }));
    return;
  }
  append(head, badge(flow.state), ' ', el('span', { class: 'muted' }, 'created ', timeEl(flow.createdAt)),
    flow.finishedAt ? el('span', { class: 'muted' }, ' · ended ', timeEl(flow.finishedAt)) : null);
  $('flow-note').textContent = flowSummary(flow);
  var layout = flowLayout(flow);
  var canvas = el('div', { class: 'flow-canvas' }, flowEdges(flow, layout),
    flow.nodes.map(function (node) { return flowNode(node, layout.at[node.id]); }));
  canvas.style.width = layout.width + 'px';
  canvas.style.height = layout.height + 'px';
  append(graph, canvas);
}

/* Opens flow id's graph at the top of the page (from a run's detail, the run closes). */
function openFlow(id) {
  select({ flow: id, run: null });
  window.scrollTo(0, 0);
}

function closeFlow() { select({ flow: null }); }
`;
