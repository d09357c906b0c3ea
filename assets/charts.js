// Charts: draws every `[data-chart]` container from the inline JSON it names (written by the hub
// with `layout::json_script`) using uPlot. Colours come from the page's CSS variables, so charts
// follow light and dark mode; charts resize with their container and redraw when the theme flips.
// Spec: {type: "line"|"bar", time?: bool (x are YYYY-MM-DD days), x: [...], xFormat?: "hour"|"pct",
//        series: [{label, values, second?: bool (own axis on the right)}]}
"use strict";
(function () {
  const drawn = [];
  const COUNTS = [1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 2500, 5000, 10000, 20000, 50000, 100000];

  function css(name, fallback) {
    const v = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
    return v || fallback;
  }

  function dayToSeconds(s) {
    const p = String(s).split("-").map(Number);
    return new Date(p[0], p[1] - 1, p[2]).getTime() / 1000;
  }

  // An hour of the day on the viewer's clock (their 12/24-hour preference): "07" on an axis and
  // "07:00" in the legend, or "7 AM" in both.
  function hourLabel(v, legend) {
    if (window.bh && window.bh.hour12 && window.bh.hour12()) return (v % 12 || 12) + (v < 12 ? " AM" : " PM");
    return String(v).padStart(2, "0") + (legend ? ":00" : "");
  }

  // A day on a time axis in words, as the viewer's browser writes dates: "Dec 6" (with the year
  // in the legend), never "12/6".
  function dayLabel(secs, withYear) {
    const o = { month: "short", day: "numeric" };
    if (withYear) o.year = "numeric";
    return new Date(secs * 1000).toLocaleDateString(undefined, o);
  }

  function height(el) {
    return el.clientWidth < 480 ? 180 : 220;
  }

  function options(spec, el) {
    const accent = css("--accent", "#2f6b3a");
    const soft = css("--accent-soft", "#e3efe4");
    const muted = css("--muted", "#5b645d");
    const line = css("--line", "#dde2dc");
    const rare = css("--rare", "#9a5b00");
    const bar = spec.type === "bar";
    const font = "12px system-ui, -apple-system, sans-serif";
    const x = spec.time ? spec.x.map(dayToSeconds) : spec.x.map(Number);
    const step = x.length > 1 ? x[1] - x[0] : spec.time ? 86400 : 1;
    const axis = { stroke: muted, font: font, grid: { stroke: line, width: 1 }, ticks: { stroke: line, width: 1 } };
    const xAxis = Object.assign({}, axis, { grid: { show: false } });
    if (spec.xFormat === "hour") {
      xAxis.incrs = [1, 2, 3, 6, 12];
      xAxis.values = (u, splits) => splits.map((v) => hourLabel(v, false));
    } else if (spec.time) {
      xAxis.space = 64;
      xAxis.values = (u, splits) => splits.map((v) => dayLabel(v, false));
    } else if (spec.xFormat === "pct") {
      xAxis.incrs = [0.05, 0.1, 0.2, 0.25, 0.5];
      xAxis.values = (u, splits) => splits.map((v) => Math.round(v * 100) + "%");
    }
    const yAxis = Object.assign({}, axis, { incrs: COUNTS, size: 44 });
    const axes = [xAxis, yAxis];
    const scales = {
      x: {
        time: !!spec.time,
        range: bar ? (u, min, max) => [min - step / 2, max + step / 2] : (u, min, max) => [min, max === min ? min + step : max],
      },
      y: { range: (u, min, max) => [0, Math.max(max, 1) * 1.08] },
    };
    const series = [{ label: spec.time ? "Day" : spec.xFormat === "pct" ? "Confidence" : "Hour",
      value: spec.time ? (u, v) => (v == null ? "–" : dayLabel(v, true)) :
        spec.xFormat === "pct" ? (u, v) => (v == null ? "–" : Math.round(v * 100) + "%") :
        spec.xFormat === "hour" ? (u, v) => (v == null ? "–" : hourLabel(v, true)) : undefined }];
    spec.series.forEach((s, i) => {
      const colour = i === 0 ? accent : rare;
      const one = { label: s.label, stroke: colour, width: 2, points: { show: false } };
      if (bar) {
        one.fill = accent;
        one.paths = uPlot.paths.bars({ size: [0.75, 48] });
      } else if (i === 0) {
        one.fill = soft;
      }
      if (s.second) {
        one.scale = "second";
        scales.second = { range: (u, min, max) => [0, Math.max(max, 1) * 1.08] };
        axes.push(Object.assign({}, axis, { scale: "second", side: 1, incrs: COUNTS, size: 36, grid: { show: false } }));
      }
      series.push(one);
    });
    if (series[0].value === undefined) delete series[0].value;
    const data = [x].concat(spec.series.map((s) => s.values));
    return {
      opts: { width: el.clientWidth || 300, height: height(el), scales: scales, axes: axes, series: series,
        legend: { show: true, live: true }, cursor: { drag: { x: false, y: false } } },
      data: data,
    };
  }

  function draw(el) {
    if (!window.uPlot) return;
    const source = document.getElementById(el.dataset.chart);
    if (!source) return;
    const spec = JSON.parse(source.textContent);
    el.textContent = "";
    const built = options(spec, el);
    const plot = new uPlot(built.opts, built.data, el);
    el.dataset.drawn = "1";
    drawn.push({ el: el, plot: plot });
  }

  function scan(root) {
    (root || document).querySelectorAll("[data-chart]:not([data-drawn])").forEach((el) => {
      try { draw(el); } catch (e) { window.__bhErrors && window.__bhErrors.push("chart: " + e); }
    });
  }

  function redrawAll() {
    drawn.splice(0).forEach((d) => {
      d.plot.destroy();
      delete d.el.dataset.drawn;
    });
    scan(document);
  }

  let pending = 0;
  const resizer = window.ResizeObserver ? new ResizeObserver(() => {
    cancelAnimationFrame(pending);
    pending = requestAnimationFrame(() => {
      drawn.forEach((d) => {
        const w = d.el.clientWidth;
        if (w > 0 && Math.abs(w - d.plot.width) > 1) d.plot.setSize({ width: w, height: height(d.el) });
      });
    });
  }) : null;

  const observe = () => drawn.forEach((d) => { if (resizer && !d.observed) { resizer.observe(d.el); d.observed = true; } });

  scan(document);
  observe();
  document.addEventListener("htmx:afterSettle", () => { scan(document); observe(); });
  const dark = window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)");
  if (dark && dark.addEventListener) dark.addEventListener("change", () => { redrawAll(); observe(); });
  window.bhCharts = { scan: scan, redraw: redrawAll };
})();
