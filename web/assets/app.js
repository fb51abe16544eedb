// picker's progressive enhancement. Every page works without this file; with it,
// sorting and paging swap the table in place, charts are drawn with the vendored
// uPlot, and the command line gets a copy button. No inline code anywhere: the
// Content-Security-Policy allows scripts from this server only.
(function () {
  'use strict';

  // Charts drawn on this page, for tests and the curious (window.pickerCharts[0].data).
  window.pickerCharts = [];
  var colors = ['#0b5cad', '#d9822b', '#3d9a6a', '#c2453d', '#7d5bb5', '#c7a22e', '#7c8791', '#2aa3b3'];

  function money(v) {
    if (v == null) return '–';
    return '$' + (v < 1 ? v.toFixed(4) : v.toFixed(2));
  }

  // Axis ticks: cents, or tenths of a cent for sub-dollar scales.
  function tick(v) {
    if (v == null) return '';
    return '$' + (v !== 0 && Math.abs(v) < 1 ? v.toFixed(3) : v.toFixed(2));
  }

  function drawCharts() {
    if (typeof uPlot === 'undefined') return;
    var els = document.querySelectorAll('[data-chart]');
    Array.prototype.forEach.call(els, function (el) {
      var d = JSON.parse(el.getAttribute('data-chart'));
      var series = [{}];
      var data = [d.x];
      d.series.forEach(function (s, i) {
        var opts = {
          label: s.label,
          stroke: colors[i % colors.length],
          width: 2,
          spanGaps: true,
          paths: uPlot.paths.stepped({ align: 1 }),
          points: { show: true, size: 7 },
          value: function (u, v) { return money(v); }
        };
        // A GPU model's chart has a line per provider, more than the palette: the
        // second round of colours is dashed, the third dotted.
        var round = Math.floor(i / colors.length) % 3;
        if (round > 0) opts.dash = round === 1 ? [8, 4] : [2, 3];
        series.push(opts);
        data.push(s.values);
      });
      // As wide as its box, which a narrow window narrows (never wider than the page).
      var width = Math.max(200, el.clientWidth || 800);
      var u = new uPlot({
        width: width,
        height: 320,
        series: series,
        scales: { x: { time: true } },
        // The tables below say UTC; so does the time axis.
        tzDate: function (ts) { return uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'); },
        axes: [{}, { label: d.unit, size: 70, values: function (u, vals) { return vals.map(tick); } }]
      }, data, el);
      var drawn = 0;
      d.series.forEach(function (s) { s.values.forEach(function (v) { if (v != null) drawn++; }); });
      el.setAttribute('data-drawn', String(drawn));
      window.pickerCharts.push(u);
      window.addEventListener('resize', function () {
        u.setSize({ width: Math.max(200, el.clientWidth), height: 320 });
      });
    });
  }

  // Sorting and paging links marked data-swap="ID" fetch the page and replace that
  // element, keeping the URL (and so the shareable query) in step.
  function swap(a) {
    var id = a.getAttribute('data-swap');
    var focusId = a.id;
    return fetch(a.href, { headers: { 'Accept': 'text/html' }, credentials: 'same-origin' })
      .then(function (r) {
        if (!r.ok) throw new Error('HTTP ' + r.status);
        return r.text();
      })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, 'text/html');
        var fresh = doc.getElementById(id);
        var cur = document.getElementById(id);
        if (!fresh || !cur) throw new Error('no #' + id);
        cur.replaceWith(document.importNode(fresh, true));
        history.pushState({ swapped: id }, '', a.href);
        var again = focusId && document.getElementById(focusId);
        if (again) again.focus();
      })
      .catch(function () { window.location.href = a.href; });
  }

  document.addEventListener('click', function (e) {
    var a = e.target.closest && e.target.closest('a[data-swap]');
    if (!a || e.button !== 0 || e.ctrlKey || e.metaKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    swap(a);
  });
  window.addEventListener('popstate', function (e) {
    if (e.state && e.state.swapped) window.location.reload();
  });

  function copyButtons() {
    var btns = document.querySelectorAll('button[data-copy]');
    Array.prototype.forEach.call(btns, function (b) {
      var src = document.getElementById(b.getAttribute('data-copy'));
      if (!src || !navigator.clipboard) return;
      b.hidden = false;
      b.addEventListener('click', function () {
        navigator.clipboard.writeText(src.textContent).then(function () {
          b.textContent = 'Copied';
          setTimeout(function () { b.textContent = 'Copy'; }, 1500);
        }, function () { b.textContent = 'Select and copy'; });
      });
    });
  }

  document.addEventListener('DOMContentLoaded', function () {
    drawCharts();
    copyButtons();
  });
})();
