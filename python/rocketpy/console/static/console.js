// rocketpy console: local times, and live charts drawn as SVG from a JSON endpoint polled
// every 2 s. No library, no build step. Failures show in the chart, never as page errors.
"use strict";

document.querySelectorAll(".time[data-ms]").forEach((el) => {
  el.textContent = new Date(Number(el.dataset.ms)).toLocaleString();
});

const COLORS = ["#2f6fde", "#e07b24", "#2a9d61"];
const POINTS = 60;
const SVG = "http://www.w3.org/2000/svg";

function liveChart(section) {
  const url = section.dataset.live;
  const rate = section.dataset.mode === "rate";
  const series = section.dataset.series.split(",").map((s, i) => {
    const [key, label] = s.split(":");
    return { key, label, color: COLORS[i % COLORS.length], values: [] };
  });
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", "0 0 600 140");
  svg.setAttribute("preserveAspectRatio", "none");
  const legend = document.createElement("div");
  legend.className = "legend";
  section.append(svg, legend);
  let previous = null;

  function draw() {
    const all = series.flatMap((s) => s.values);
    const top = Math.max(1, ...all) * 1.1;
    svg.replaceChildren();
    for (const s of series) {
      const line = document.createElementNS(SVG, "polyline");
      const pts = s.values.map((v, i) => `${(i * 600) / (POINTS - 1)},${138 - (v / top) * 134}`);
      line.setAttribute("points", pts.join(" "));
      line.setAttribute("fill", "none");
      line.setAttribute("stroke", s.color);
      line.setAttribute("stroke-width", "2");
      line.setAttribute("vector-effect", "non-scaling-stroke");
      svg.append(line);
    }
    legend.replaceChildren(
      ...series.map((s) => {
        const span = document.createElement("span");
        const last = s.values.length ? s.values[s.values.length - 1] : 0;
        span.innerHTML = `<b style="background:${s.color}"></b>`;
        span.append(`${s.label} ${last.toFixed(rate ? 1 : 0)} ${section.dataset.unit}`);
        return span;
      }),
      Object.assign(document.createElement("span"), { textContent: `  (max ${top.toFixed(0)})` })
    );
  }

  async function poll() {
    try {
      const response = await fetch(url, { cache: "no-store" });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      const now = await response.json();
      if (!rate || previous) {
        for (const s of series) {
          const v = rate ? (now[s.key] - previous[s.key]) / Math.max(0.001, now.time - previous.time) : now[s.key];
          s.values.push(Math.max(0, v));
          if (s.values.length > POINTS) s.values.shift();
        }
        draw();
      }
      previous = now;
    } catch (e) {
      legend.textContent = `live data unavailable: ${e.message}`;
    }
  }
  poll();
  setInterval(poll, 2000);
}

document.querySelectorAll("[data-live]").forEach(liveChart);
