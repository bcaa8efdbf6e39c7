/**
 * Browser code of the dashboard, part 2: the throughput and latency charts of
 * the selected queue over the last hour, drawn as inline SVG from the
 * per-minute metrics, with a hover guide showing each minute's figures.
 */
export const CLIENT_CHARTS = String.raw`
/* A round step (1, 2 or 5 times a power of ten, at least 1) giving about four gridlines. */
function niceStep(peak) {
  var raw = Math.max(peak / 4, 1);
  var power = Math.pow(10, Math.floor(Math.log10(raw)));
  var fraction = raw / power;
  return (fraction <= 1 ? 1 : fraction <= 2 ? 2 : fraction <= 5 ? 5 : 10) * power;
}

function fmtMsAxis(ms) {
  if (ms === 0) return '0';
  if (ms < 1000) return Math.round(ms) + ' ms';
  if (ms < 60000) return Number((ms / 1000).toFixed(1)) + ' s';
  return Number((ms / 60000).toFixed(1)) + ' min';
}

/*
 * Draws one chart into container. spec: { label, minutes, format, series:
 * [{ label, kind: 'bar' | 'line' | 'area', name, values, stackOn? }], rows(i) }
 * where values hold a number or null (no data) per minute; a bar series with
 * stackOn sits on top of that series' bars.
 */
function drawChart(container, spec) {
  clear(container);
  var width = Math.max(280, Math.floor(container.clientWidth - 16));
  var height = 164;
  var left = 52, right = 10, top = 10, bottom = 22;
  var plotW = width - left - right, plotH = height - top - bottom;
  var n = spec.minutes.length;
  var step = plotW / Math.max(n, 1);
  var peak = 0;
  spec.series.forEach(function (s) {
    s.values.forEach(function (v, i) {
      var total = (v || 0) + (s.stackOn ? s.stackOn.values[i] || 0 : 0);
      if (total > peak) peak = total;
    });
  });
  var tick = niceStep(peak);
  var max = tick * Math.max(1, Math.ceil(peak / tick));
  var x = function (i) { return left + step * (i + 0.5); };
  var y = function (v) { return top + plotH - (v / max) * plotH; };
  var root = svgEl('svg', { width: width, height: height, viewBox: '0 0 ' + width + ' ' + height, role: 'img', 'aria-label': spec.label });

  for (var v = 0; v <= max + tick / 2; v += tick) {
    var gy = Math.round(y(v)) + 0.5;
    append(root, svgEl('line', { x1: left, x2: width - right, y1: gy, y2: gy, class: v === 0 ? 'axis-line' : 'gridline' }));
    append(root, svgEl('text', { x: left - 7, y: gy + 3.5, 'text-anchor': 'end', class: 'axis-label', text: spec.format(v) }));
  }
  for (var i = 0; i < n; i++) {
    var fromEnd = n - 1 - i;
    if (fromEnd % 15 !== 0) continue;
    var anchor = i === n - 1 ? 'end' : i === 0 ? 'start' : 'middle';
    var lx = i === n - 1 ? width - right : x(i);
    append(root, svgEl('text', { x: lx, y: height - 6, 'text-anchor': anchor, class: 'axis-label', text: fromEnd === 0 ? 'now' : fmtClock(spec.minutes[i].at) }));
  }

  spec.series.forEach(function (s) {
    if (s.kind === 'bar') {
      var barW = Math.max(1.5, step * 0.62);
      s.values.forEach(function (value, j) {
        if (!value) return;
        var under = s.stackOn ? s.stackOn.values[j] || 0 : 0;
        var y1 = y(under + value), y0 = y(under);
        append(root, svgEl('rect', { x: x(j) - barW / 2, y: y1, width: barW, height: Math.max(1, y0 - y1), rx: Math.min(1.5, barW / 3), class: 'bar-' + s.name + (j === n - 1 ? ' partial' : '') }));
      });
      return;
    }
    /* Lines break where a minute has no data (e.g. no run started, so no average wait). */
    var runs = [], current = [];
    s.values.forEach(function (value, j) {
      if (value === null || value === undefined) { if (current.length) runs.push(current); current = []; }
      else current.push([x(j), y(value)]);
    });
    if (current.length) runs.push(current);
    var path = function (points) {
      return points.map(function (p, k) { return (k ? 'L' : 'M') + p[0].toFixed(1) + ' ' + p[1].toFixed(1); }).join(' ');
    };
    var lastX = x(n - 1);
    runs.forEach(function (points) {
      var line = path(points);
      if (points.length === 1) {
        append(root, svgEl('circle', { cx: points[0][0], cy: points[0][1], r: 2.5, class: 'dot-' + s.name }));
        return;
      }
      if (s.kind === 'area') {
        var baseY = y(0).toFixed(1);
        var area = line + ' L' + points[points.length - 1][0].toFixed(1) + ' ' + baseY + ' L' + points[0][0].toFixed(1) + ' ' + baseY + ' Z';
        append(root, svgEl('path', { d: area, class: 'area-' + s.name }));
      }
      /* The current minute is still filling up: its segment is dashed, so a low value there does not read as a drop. */
      var partial = points[points.length - 1][0] === lastX;
      var settled = partial ? points.slice(0, -1) : points;
      if (settled.length > 1) append(root, svgEl('path', { d: path(settled), class: 'line-' + s.name }));
      if (partial) append(root, svgEl('path', { d: path(points.slice(-2)), class: 'line-' + s.name + ' partial' }));
    });
  });

  var guide = svgEl('line', { x1: 0, x2: 0, y1: top, y2: top + plotH, class: 'guide', visibility: 'hidden' });
  var zone = svgEl('rect', { x: left, y: top, width: plotW, height: plotH, class: 'hover-zone' });
  var tip = el('div', { class: 'tip', hidden: true });
  append(root, guide, zone);
  zone.addEventListener('mousemove', function (event) {
    var box = root.getBoundingClientRect();
    var index = Math.min(n - 1, Math.max(0, Math.floor((event.clientX - box.left - left) / step)));
    var gx = x(index);
    guide.setAttribute('x1', gx);
    guide.setAttribute('x2', gx);
    guide.setAttribute('visibility', 'visible');
    var at = spec.minutes[index].at;
    clear(tip);
    append(tip, el('b', { text: fmtClock(at) + '–' + fmtClock(at + 60000) + (index === n - 1 ? ' (so far)' : '') }), spec.rows(index).map(function (row) {
      return el('div', {}, el('span', { class: 'key ' + row[0] }), row[1]);
    }));
    tip.hidden = false;
    var tipX = gx + 14 + tip.offsetWidth > width ? gx - 14 - tip.offsetWidth : gx + 14;
    tip.style.left = tipX + 8 + 'px';
    tip.style.top = top + 4 + 'px';
  });
  zone.addEventListener('mouseleave', function () { guide.setAttribute('visibility', 'hidden'); tip.hidden = true; });
  append(container, root, tip);
}

function renderCharts(force) {
  var metrics = state.metrics;
  var throughput = $('throughput'), latency = $('latency');
  var width = throughput.clientWidth;
  var sig = metrics ? metrics.queue + JSON.stringify(metrics.minutes) : '';
  if (!force && sig === state.chartSig && width === state.chartWidth) return;
  state.chartSig = sig;
  state.chartWidth = width;
  document.querySelectorAll('.chart-queue').forEach(function (node) { node.textContent = metrics ? metrics.queue : ''; });
  if (!metrics) { clear(throughput); clear(latency); return; }
  var minutes = metrics.minutes;
  var sum = function (key) { return minutes.reduce(function (total, m) { return total + m[key]; }, 0); };
  var succeeded = { name: 'succeeded', kind: 'bar', label: 'Succeeded', values: minutes.map(function (m) { return m.succeeded; }) };
  var failed = { name: 'failed', kind: 'bar', label: 'Failed', stackOn: succeeded, values: minutes.map(function (m) { return m.failed; }) };
  var enqueued = { name: 'enqueued', kind: 'line', label: 'Enqueued', values: minutes.map(function (m) { return m.enqueued; }) };
  $('throughput-note').textContent = fmtInt(sum('enqueued')) + ' enqueued · ' + fmtInt(sum('succeeded') + sum('failed')) + ' finished · last hour';
  drawChart(throughput, {
    label: 'Runs enqueued and finished per minute over the last hour',
    minutes: minutes,
    format: fmtCompact,
    series: [succeeded, failed, enqueued],
    rows: function (i) {
      var m = minutes[i];
      return [
        ['line k-enqueued', 'Enqueued ' + fmtInt(m.enqueued)],
        ['k-succeeded', 'Succeeded ' + fmtInt(m.succeeded)],
        ['k-failed', 'Failed ' + fmtInt(m.failed)],
        ['', 'Retried ' + fmtInt(m.retried) + ' · quarantined ' + fmtInt(m.quarantined) + ' · cancelled ' + fmtInt(m.cancelled || 0)],
      ];
    },
  });
  var started = sum('started');
  $('latency-note').textContent = started
    ? 'avg ' + fmtDuration(sum('waitMs') / started) + ' over ' + fmtInt(started) + ' starts · last hour'
    : 'no run started in the last hour';
  drawChart(latency, {
    label: 'Average wait from enqueue to start per minute over the last hour',
    minutes: minutes,
    format: fmtMsAxis,
    series: [{ name: 'wait', kind: 'area', label: 'Average wait', values: minutes.map(function (m) { return m.started ? m.waitMs / m.started : null; }) }],
    rows: function (i) {
      var m = minutes[i];
      return [
        ['k-wait', 'Average wait ' + (m.started ? fmtDuration(m.waitMs / m.started) : '—')],
        ['', 'Started ' + fmtInt(m.started)],
      ];
    },
  });
}
`;
