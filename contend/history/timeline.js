// contend's history timeline: zoom (wheel, buttons) and pan (drag) the lanes; names stay put.
// Every drawn element carries its times (data-t0, data-t1) in the axis' unit; a view is the
// time range [v0, v1] drawn across the plot's width. The page is drawn right without this
// script, at its first view; the script redraws it for any other.
(function () {
  "use strict";
  const svg = document.getElementById("timeline");
  if (!svg) return;
  const d = svg.dataset;
  const LEFT = +d.left, PLOT = +d.plot, TOP = +d.top, CHAR = +d.char, MIN_BAR = +d.minBar;
  const START = +d.start, STOP = +d.stop, WHOLE = Math.max(STOP - START, 1e-3);
  const NS = "http://www.w3.org/2000/svg";
  const timed = Array.from(svg.querySelectorAll("#lanes [data-t0]"));
  const axis = document.getElementById("axis");
  const win = document.getElementById("window");
  let view = [+d.v0, +d.v1];

  const x = (t) => LEFT + ((t - view[0]) / (view[1] - view[0])) * PLOT;
  const fit = (full, short, width) =>
    full.length * CHAR + 6 <= width ? full : short.length * CHAR + 6 <= width ? short : "";

  function niceStep(span) {
    const raw = span / 8, p = Math.pow(10, Math.floor(Math.log10(raw)));
    for (const m of [1, 2, 5, 10]) if (m * p >= raw) return m * p;
    return 10 * p;
  }

  function drawAxis() {
    while (axis.firstChild) axis.removeChild(axis.firstChild);
    const step = niceStep(view[1] - view[0]);
    const digits = Math.max(0, -Math.floor(Math.log10(step)));
    for (let t = Math.ceil(view[0] / step) * step; t <= view[1]; t += step) {
      const line = document.createElementNS(NS, "line");
      const px = x(t).toFixed(1);
      line.setAttribute("x1", px); line.setAttribute("x2", px);
      line.setAttribute("y1", TOP - 22); line.setAttribute("y2", svg.getAttribute("height"));
      const text = document.createElementNS(NS, "text");
      text.setAttribute("x", (+px + 2).toFixed(1)); text.setAttribute("y", TOP - 24);
      text.textContent = t.toFixed(digits) + (d.unit === "ms" ? " ms" : "");
      axis.appendChild(line); axis.appendChild(text);
    }
  }

  function draw() {
    for (const e of timed) {
      const t0 = +e.dataset.t0, x0 = x(t0);
      if (e.tagName === "line") {
        e.setAttribute("x1", x0.toFixed(1)); e.setAttribute("x2", x0.toFixed(1));
        continue;
      }
      const x1 = x(+e.dataset.t1);
      if (e.tagName === "rect") {
        e.setAttribute("x", x0.toFixed(1));
        e.setAttribute("width", Math.max(+(e.dataset.min || MIN_BAR), x1 - x0).toFixed(1));
      } else if (e.dataset.outside) {  // an involved operation's name, after its bar or before it
        const after = Math.max(x1, x0 + 8) + 3, width = e.dataset.full.length * CHAR;
        const before = after + width > LEFT + PLOT && x0 - 3 - width >= LEFT;
        e.setAttribute("x", (before ? x0 - 3 : after).toFixed(1));
        e.setAttribute("text-anchor", before ? "end" : "start");
      } else {
        e.setAttribute("x", (x0 + 3).toFixed(1));
        e.textContent = fit(e.dataset.full, e.dataset.short, x1 - x0);
      }
    }
    drawAxis();
    const at = (t) => LEFT + ((t - START) / WHOLE) * PLOT;
    win.setAttribute("x", at(view[0]).toFixed(1));
    win.setAttribute("width", Math.max(2, at(view[1]) - at(view[0])).toFixed(1));
  }

  function show(lo, hi) {
    const span = Math.min(Math.max(hi - lo, WHOLE / 1e6), WHOLE * 1.02);
    const mid = Math.min(Math.max((lo + hi) / 2, START), STOP);
    view = [mid - span / 2, mid + span / 2];
    draw();
  }

  const range = (text) => text.split(",").map(Number);
  for (const b of document.querySelectorAll("button[data-view]")) {
    b.addEventListener("click", () => {
      const which = b.dataset.view;
      if (which === "all") show(START - WHOLE * 0.01, STOP + WHOLE * 0.01);
      else show(...range(which === "focus" ? d.focus : d.fault));
    });
  }
  for (const b of document.querySelectorAll("button[data-zoom]")) {
    b.addEventListener("click", () => {
      const mid = (view[0] + view[1]) / 2, half = ((view[1] - view[0]) * +b.dataset.zoom) / 2;
      show(mid - half, mid + half);
    });
  }
  for (const li of document.querySelectorAll("li[data-view-range]")) {
    li.addEventListener("click", () => show(...range(li.dataset.viewRange)));
  }
  svg.addEventListener("wheel", (ev) => {
    ev.preventDefault();
    const box = svg.getBoundingClientRect();
    const px = Math.min(Math.max(ev.clientX - box.left, LEFT), LEFT + PLOT);
    const t = view[0] + ((px - LEFT) / PLOT) * (view[1] - view[0]);
    const k = Math.exp(ev.deltaY * 0.0015);
    show(t - (t - view[0]) * k, t + (view[1] - t) * k);
  }, { passive: false });
  let drag = null;
  svg.addEventListener("mousedown", (ev) => {
    const box = svg.getBoundingClientRect();
    if (ev.clientY - box.top < 24) {  // the overview strip: centre the view where clicked
      const t = START + ((ev.clientX - box.left - LEFT) / PLOT) * WHOLE, half = (view[1] - view[0]) / 2;
      show(t - half, t + half);
      return;
    }
    drag = { x: ev.clientX, view: view.slice() };
    svg.style.cursor = "grabbing";
  });
  window.addEventListener("mousemove", (ev) => {
    if (!drag) return;
    const dt = ((ev.clientX - drag.x) / PLOT) * (drag.view[1] - drag.view[0]);
    view = [drag.view[0] - dt, drag.view[1] - dt];
    draw();
  });
  window.addEventListener("mouseup", () => { drag = null; svg.style.cursor = ""; });
  draw();
})();
