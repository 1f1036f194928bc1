/* gluonbench report.html renderer: draws a run folder's report from the JSON embedded in the page.
   No network, no library: tables are HTML, plots are inline SVG written as text. One renderer per
   kind of run folder (the "kind" of its records); fields a renderer does not know are shown as tables. */
(function () {
  "use strict";

  var payload = JSON.parse(document.getElementById("gluonbench-data").textContent);
  var root = document.getElementById("report");
  var PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"];
  var SPLIT_COLORS = { wait: "#d62728", copy: "#ff7f0e", compute: "#1f77b4", kvstore: "#9467bd", rest: "#bbbbbb" };

  // -- formatting ---------------------------------------------------------------------------------
  function esc(s) {
    return String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
  }
  function isNum(v) { return typeof v === "number" && isFinite(v); }
  function fmt(v, digits) {
    if (!isNum(v)) { return "-"; }
    if (Math.abs(v) >= 1000) { return v.toFixed(0); }
    return String(Number(v.toPrecision(digits || 3)));
  }
  function pct(v, digits) { return isNum(v) ? (v * 100).toFixed(digits || 0) + " %" : "-"; }
  function ci(pair, f) {
    if (!pair || pair.length !== 2 || !isNum(pair[0]) || !isNum(pair[1])) { return ""; }
    f = f || fmt;
    return f(pair[0]) + "-" + f(pair[1]);
  }
  function pctCi(pair) {
    if (!pair || pair.length !== 2 || !isNum(pair[0]) || !isNum(pair[1])) { return ""; }
    return " [" + (pair[0] * 100).toFixed(0) + "-" + (pair[1] * 100).toFixed(0) + "]";
  }
  function get(obj, key, fallback) {
    return obj && obj[key] !== undefined && obj[key] !== null ? obj[key] : fallback;
  }
  function list(v) { return Array.isArray(v) ? v : []; }

  // -- HTML building -------------------------------------------------------------------------------
  function h(tag, inner, attrs) { return "<" + tag + (attrs ? " " + attrs : "") + ">" + inner + "</" + tag + ">"; }
  function section(title, inner) { return h("h2", esc(title)) + inner; }
  function para(text, cls) { return h("p", text, cls ? 'class="' + cls + '"' : ""); }
  function table(columns, rows, numeric, rowClasses) {
    numeric = numeric || [];
    var head = columns.map(function (c, i) { return h("th", esc(c), numeric[i] ? 'class="num"' : ""); }).join("");
    var body = rows.map(function (r, n) {
      var cls = rowClasses && rowClasses[n] ? ' class="' + rowClasses[n] + '"' : "";
      return "<tr" + cls + ">" + r.map(function (c, i) {
        return h("td", c === undefined || c === null ? "-" : c, numeric[i] ? 'class="num"' : "");
      }).join("") + "</tr>";
    }).join("");
    return h("table", h("tr", head) + body);
  }
  function bullets(items) {
    return items.length ? h("ul", items.map(function (t) { return h("li", t); }).join(""), 'class="list"') : "";
  }
  function kv(pairs) {
    return h("dl", pairs.filter(function (p) { return p[1] !== undefined && p[1] !== null && p[1] !== ""; })
      .map(function (p) { return h("dt", esc(p[0])) + h("dd", p[1]); }).join(""), 'class="kv"');
  }
  function code(s) { return h("code", esc(s)); }

  /* Any JSON value as HTML: objects as key/value tables, lists of objects as tables. */
  function generic(v, depth) {
    depth = depth || 0;
    if (v === null || v === undefined) { return "-"; }
    if (typeof v === "number") { return esc(fmt(v, 4)); }
    if (typeof v !== "object") { return esc(v); }
    if (depth > 4) { return code(JSON.stringify(v)); }
    if (Array.isArray(v)) {
      if (!v.length) { return "-"; }
      if (v.every(function (x) { return x !== null && typeof x === "object" && !Array.isArray(x); })) {
        var keys = [];
        v.forEach(function (x) { Object.keys(x).forEach(function (k) { if (keys.indexOf(k) < 0) { keys.push(k); } }); });
        return table(keys, v.map(function (x) { return keys.map(function (k) { return generic(x[k], depth + 1); }); }));
      }
      if (v.length === 2 && v.every(isNum)) { return "[" + esc(fmt(v[0], 4)) + ", " + esc(fmt(v[1], 4)) + "]"; }
      return v.map(function (x) { return generic(x, depth + 1); }).join(", ");
    }
    var rows = Object.keys(v).map(function (k) { return [esc(k), generic(v[k], depth + 1)]; });
    return rows.length ? table(["field", "value"], rows) : "-";
  }

  // -- SVG charts ----------------------------------------------------------------------------------
  function niceStep(span) {
    var raw = span / 5, p = Math.pow(10, Math.floor(Math.log10(raw))), m = raw / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 2.5 ? 2.5 : m <= 5 ? 5 : 10) * p;
  }
  function axis(max) {
    if (!(max > 0)) { max = 1; }
    var step = niceStep(max), top = Math.ceil(max / step - 1e-9) * step, ticks = [];
    for (var t = 0; t <= top + step / 2; t += step) { ticks.push(t); }
    return { max: top, ticks: ticks };
  }
  function svgOpen(width, height, title) {
    return '<svg width="' + width + '" height="' + height + '" viewBox="0 0 ' + width + " " + height +
      '" role="img" aria-label="' + esc(title) + '">';
  }
  /* A subtitle in lines of at most about 140 characters, broken after "; ". */
  function subLines(sub) {
    var lines = [], line = "";
    String(sub || "").split("; ").forEach(function (part) {
      if (line && (line + "; " + part).length > 140) { lines.push(line + ";"); line = part; } else { line = line ? line + "; " + part : part; }
    });
    if (line) { lines.push(line); }
    return lines;
  }
  function extraLines(o) { return Math.max(subLines(o.sub).length - 1, 0) * 14; }
  function heading(o, left) {
    return '<text class="title" x="' + left + '" y="15">' + esc(o.title) + "</text>" +
      subLines(o.sub).map(function (line, i) {
        return '<text class="sub" x="' + left + '" y="' + (31 + 14 * i) + '">' + esc(line) + "</text>";
      }).join("");
  }

  /* Points against a numeric x; y from zero; whiskers lo-hi; a legend when there are several series. */
  function xyChart(o) {
    var legend = o.series.filter(function (s) { return s.name; });
    var dy = extraLines(o), W = o.width || 940, H = (o.height || 320) + dy, L = 70, R = 20;
    var T = (legend.length > 1 ? 62 : 46) + dy, B = 44;
    var pw = W - L - R, ph = H - T - B, xs = [], ymax = 0;
    o.series.forEach(function (s) {
      s.points.forEach(function (p) {
        if (!isNum(p.y)) { return; }
        xs.push(p.x);
        ymax = Math.max(ymax, p.y, isNum(p.hi) ? p.hi : 0);
      });
    });
    if (!xs.length) { return para(esc(o.title) + ": nothing measured.", "note"); }
    var y = axis(ymax * 1.08), x0 = Math.min.apply(null, xs), x1 = Math.max.apply(null, xs);
    if (x0 === x1) { x0 -= 1; x1 += 1; }
    var pad = (x1 - x0) * 0.04;
    x0 -= pad; x1 += pad;
    function X(v) { return L + pw * (v - x0) / (x1 - x0); }
    function Y(v) { return T + ph - ph * v / y.max; }
    var out = [svgOpen(W, H, o.title), heading(o, L)];
    y.ticks.forEach(function (t) {
      out.push('<line x1="' + L + '" x2="' + (L + pw) + '" y1="' + Y(t).toFixed(1) + '" y2="' + Y(t).toFixed(1) +
        '" stroke="#eee"/>');
      out.push('<text x="' + (L - 6) + '" y="' + (Y(t) + 4).toFixed(1) + '" text-anchor="end">' + esc(fmt(t, 4)) + "</text>");
    });
    (o.xTicks || xs).filter(function (v, i, a) { return a.indexOf(v) === i; }).forEach(function (t) {
      out.push('<text x="' + X(t).toFixed(1) + '" y="' + (T + ph + 16) + '" text-anchor="middle">' + esc(t) + "</text>");
    });
    out.push('<rect x="' + L + '" y="' + T + '" width="' + pw + '" height="' + ph + '" fill="none" stroke="#bbb"/>');
    out.push('<text x="' + (L + pw / 2) + '" y="' + (H - 6) + '" text-anchor="middle" class="sub">' + esc(o.xLabel) + "</text>");
    out.push('<text transform="translate(14,' + (T + ph / 2) + ') rotate(-90)" text-anchor="middle" class="sub">' +
      esc(o.yLabel) + "</text>");
    o.series.forEach(function (s, k) {
      var color = s.color || PALETTE[k % PALETTE.length];
      var pts = s.points.filter(function (p) { return isNum(p.y); });
      if (pts.length > 1 && !s.noLine) {
        out.push('<polyline fill="none" stroke="' + color + '" stroke-width="1.6"' +
          (s.dash ? ' stroke-dasharray="6 4"' : "") + ' points="' +
          pts.map(function (p) { return X(p.x).toFixed(1) + "," + Y(p.y).toFixed(1); }).join(" ") + '"/>');
      }
      pts.forEach(function (p) {
        var px = X(p.x);
        if (isNum(p.lo) && isNum(p.hi) && p.hi > p.lo) {
          out.push('<line x1="' + px.toFixed(1) + '" x2="' + px.toFixed(1) + '" y1="' + Y(p.lo).toFixed(1) + '" y2="' +
            Y(p.hi).toFixed(1) + '" stroke="' + color + '"/>');
          [p.lo, p.hi].forEach(function (v) {
            out.push('<line x1="' + (px - 5).toFixed(1) + '" x2="' + (px + 5).toFixed(1) + '" y1="' + Y(v).toFixed(1) +
              '" y2="' + Y(v).toFixed(1) + '" stroke="' + color + '"/>');
          });
        }
        if (!s.noMarkers) {
          out.push('<circle cx="' + px.toFixed(1) + '" cy="' + Y(p.y).toFixed(1) + '" r="' + (s.small ? 2.5 : p.big ? 6 : 4) +
            '" fill="' + (s.small ? "none" : p.fill || color) + '" stroke="' + (p.fill || color) + '"><title>' + esc((s.name ? s.name + ", " : "") + o.xName + " " + p.x + ": " +
            fmt(p.y, 4) + (isNum(p.lo) && isNum(p.hi) ? " [" + fmt(p.lo, 4) + "-" + fmt(p.hi, 4) + "]" : "")) +
            "</title></circle>");
        }
        if (p.label) {
          out.push('<text x="' + px.toFixed(1) + '" y="' + (Y(isNum(p.hi) ? p.hi : p.y) - 9).toFixed(1) +
            '" text-anchor="middle" font-weight="600">' + esc(p.label) + "</text>");
        }
        if (p.below) {
          out.push('<text x="' + px.toFixed(1) + '" y="' + (Y(isNum(p.lo) ? p.lo : p.y) + 16).toFixed(1) +
            '" text-anchor="middle">' + esc(p.below) + "</text>");
        }
      });
    });
    if (legend.length > 1) {
      var lx = L;
      legend.forEach(function (s) {
        var color = s.color || PALETTE[o.series.indexOf(s) % PALETTE.length];
        out.push(s.noLine
          ? '<circle cx="' + (lx + 10) + '" cy="' + (44 + dy) + '" r="2.5" fill="none" stroke="' + color + '"/>'
          : '<line x1="' + lx + '" x2="' + (lx + 20) + '" y1="' + (44 + dy) + '" y2="' + (44 + dy) + '" stroke="' + color +
            '" stroke-width="2"' + (s.dash ? ' stroke-dasharray="6 4"' : "") + "/>");
        out.push('<text x="' + (lx + 24) + '" y="' + (48 + dy) + '">' + esc(s.name) + "</text>");
        lx += 34 + 6.2 * s.name.length;
      });
    }
    out.push("</svg>");
    return out.join("");
  }

  /* Horizontal bars from zero with optional lo-hi whiskers; items without a value show their note only. */
  function hBars(o) {
    var W = o.width || 940, L = o.labelWidth || 230, R = o.right || 150, T = 46 + extraLines(o), B = 36, row = 24;
    var items = o.items, H = T + row * items.length + B, pw = W - L - R, vmax = o.max || 0;
    if (!items.length) { return para(esc(o.title) + ": nothing measured.", "note"); }
    if (!o.max) {
      items.forEach(function (it) { vmax = Math.max(vmax, isNum(it.value) ? it.value : 0, isNum(it.hi) ? it.hi : 0); });
    }
    var x = o.max ? { max: o.max, ticks: [0, 0.25, 0.5, 0.75, 1].map(function (t) { return t * o.max; }) } : axis(vmax);
    var f = o.format || function (v) { return fmt(v, 4); };
    function X(v) { return L + pw * Math.min(Math.max(v, 0), x.max) / x.max; }
    var out = [svgOpen(W, H, o.title), heading(o, 4)];
    x.ticks.forEach(function (t) {
      out.push('<line x1="' + X(t).toFixed(1) + '" x2="' + X(t).toFixed(1) + '" y1="' + T + '" y2="' + (T + row * items.length) +
        '" stroke="#eee"/>');
      out.push('<text x="' + X(t).toFixed(1) + '" y="' + (T + row * items.length + 14) + '" text-anchor="middle">' +
        esc(o.tickFormat ? o.tickFormat(t) : fmt(t, 4)) + "</text>");
    });
    out.push('<line x1="' + L + '" x2="' + L + '" y1="' + T + '" y2="' + (T + row * items.length) + '" stroke="#999"/>');
    out.push('<text x="' + (L + pw / 2) + '" y="' + (H - 4) + '" text-anchor="middle" class="sub">' + esc(o.xLabel) + "</text>");
    items.forEach(function (it, i) {
      var y0 = T + row * i, cy = y0 + row / 2, color = it.color || PALETTE[0];
      out.push('<text x="' + (L - 6) + '" y="' + (cy + 4) + '" text-anchor="end"' + (it.bold ? ' font-weight="600"' : "") + ">" +
        esc(it.label) + "</text>");
      if (!isNum(it.value)) {
        out.push('<text x="' + (L + 6) + '" y="' + (cy + 4) + '" class="sub">' + esc(it.note || "not measured") + "</text>");
        return;
      }
      out.push('<rect x="' + L + '" y="' + (y0 + 4) + '" width="' + Math.max(X(it.value) - L, 0.5).toFixed(1) + '" height="' +
        (row - 8) + '" fill="' + color + '" fill-opacity="0.8"><title>' + esc(it.label + ": " + f(it.value) +
        (isNum(it.lo) && isNum(it.hi) ? " [" + f(it.lo) + "-" + f(it.hi) + "]" : "")) + "</title></rect>");
      var end = X(it.value);
      if (isNum(it.lo) && isNum(it.hi)) {
        out.push('<line x1="' + X(it.lo).toFixed(1) + '" x2="' + X(it.hi).toFixed(1) + '" y1="' + cy + '" y2="' + cy +
          '" stroke="#222"/>');
        [it.lo, it.hi].forEach(function (v) {
          out.push('<line x1="' + X(v).toFixed(1) + '" x2="' + X(v).toFixed(1) + '" y1="' + (cy - 5) + '" y2="' + (cy + 5) +
            '" stroke="#222"/>');
        });
        end = Math.max(end, X(it.hi));
      }
      var text = f(it.value) + (isNum(it.lo) && isNum(it.hi) ? " [" + f(it.lo) + "-" + f(it.hi) + "]" : "") +
        (it.note ? "  " + it.note : "");
      out.push('<text x="' + (end + 6).toFixed(1) + '" y="' + (cy + 4) + '">' + esc(text) + "</text>");
    });
    out.push("</svg>");
    return out.join("");
  }

  /* 100 % stacked horizontal bars: each item's parts as shares of its whole. */
  function stacked(o) {
    var dy = extraLines(o), W = o.width || 940, L = o.labelWidth || 150, R = 20, T = 64 + dy, B = 28, row = 24;
    var items = o.items.filter(function (it) { return it.parts; });
    if (!items.length) { return para(esc(o.title) + ": not recorded.", "note"); }
    var H = T + row * items.length + B, pw = W - L - R;
    var out = [svgOpen(W, H, o.title), heading(o, 4)];
    o.names.forEach(function (n, k) {
      var lx = L + k * 150;
      out.push('<rect x="' + lx + '" y="' + (40 + dy) + '" width="12" height="12" fill="' + o.colors[k] + '"/>');
      out.push('<text x="' + (lx + 16) + '" y="' + (50 + dy) + '">' + esc(n) + "</text>");
    });
    items.forEach(function (it, i) {
      var y0 = T + row * i, x = L, total = 0;
      it.parts.forEach(function (v) { total += isNum(v) && v > 0 ? v : 0; });
      out.push('<text x="' + (L - 6) + '" y="' + (y0 + row / 2 + 4) + '" text-anchor="end">' + esc(it.label) + "</text>");
      it.parts.forEach(function (v, k) {
        if (!(isNum(v) && v > 0) || !(total > 0)) { return; }
        var w = pw * v / total;
        out.push('<rect x="' + x.toFixed(1) + '" y="' + (y0 + 3) + '" width="' + w.toFixed(1) + '" height="' + (row - 6) +
          '" fill="' + o.colors[k] + '"><title>' + esc(it.label + ", " + o.names[k] + ": " + pct(v / total, 1)) + "</title></rect>");
        if (w > 38) {
          out.push('<text x="' + (x + w / 2).toFixed(1) + '" y="' + (y0 + row / 2 + 4) + '" text-anchor="middle" style="fill:#fff">' +
            esc(pct(v / total)) + "</text>");
        }
        x += w;
      });
    });
    [0, 0.25, 0.5, 0.75, 1].forEach(function (t) {
      out.push('<text x="' + (L + pw * t).toFixed(1) + '" y="' + (T + row * items.length + 14) + '" text-anchor="middle">' +
        (t * 100) + " %</text>");
    });
    out.push("</svg>");
    return out.join("");
  }

  // -- shared pieces -------------------------------------------------------------------------------
  function machine(env) {
    env = env || {};
    var gpus = list(env.gpus).join(", ") || "no GPU";
    return esc(get(env, "cpu", "?") + " (" + get(env, "cores_logical", "?") + " logical cores), " + gpus + "; Python " +
      get(env, "python", "?") + ", mxnet " + get(env, "mxnet", "?") + ", numpy " + get(env, "numpy", "?") +
      ", gluonbench " + get(env, "gluonbench", "?") + "; " + get(env, "os", "?"));
  }
  function runInfo(env, command, started, finished, extra) {
    return section("Run", kv([
      ["Machine", env && Object.keys(env).length ? machine(env) : "unknown"],
      ["Date (UTC)", started ? esc(started + (finished ? " to " + finished : "")) : ""],
      ["Command", command ? code(command) : ""]
    ].concat(extra || [])));
  }
  function repeatsText(counts, what) {
    var max = Math.max.apply(null, counts), min = Math.min.apply(null, counts);
    if (max <= 1) { return "one run per " + what + " (no spread measured)"; }
    return (min === max ? "median of " + max + " repeats" : "median of " + min + "-" + max + " repeats") +
      "; whiskers: min-max";
  }

  // a headline stage as reports name it (gluonbench/report/exporters.py stage_label)
  var STAGE_LABEL = { preprocessing: "preprocessing", disk_io: "disk I/O", gpu_io: "GPU I/O" };
  function stageLabel(k, ctx) {
    if (k === "gpu_io" && ctx && String(ctx).indexOf("gpu") !== 0) { return "model compute (CPU)"; }
    return STAGE_LABEL[k] || k;
  }

  // -- sweep (records of kind "run") ----------------------------------------------------------------
  function sweep(d) {
    var rows = list(d.rows), ok = rows.filter(function (r) { return r.runs > 0 && isNum(r.samples_per_s); });
    var best = ok.filter(function (r) { return r.workers === d.best_workers; })[0];
    var near = list(d.near_best), s = d.settings || {}, out = [];
    if (best && d.best_named === false) {
      out.push(para("<b>Best worker count: " + esc(d.best_note) + "</b>. The fastest: " + esc(best.workers) + " worker" +
        (best.workers === 1 ? "" : "s") + ", " + esc(fmt(best.samples_per_s, 4)) + " samples/s.", "headline warn"));
    } else if (best) {
      var line = "<b>Best worker count: " + best.workers + "</b>, " + esc(fmt(best.samples_per_s, 4)) + " samples/s" +
        (best.workers === d.baseline_workers ? " (the fewest workers measured)." : " (" + esc(fmt(best.speedup, 3)) + "x the " +
          esc(d.baseline_workers) + "-worker throughput).");
      var others = ok.filter(function (r) { return r !== best; });
      if (best.runs > 1) {
        line += near.length
          ? " Within run-to-run noise of it: " + esc(near.join(", ")) + " workers (their best repeat reaches its worst); " +
            "of those, fewer workers cost less CPU and memory."
          : others.length ? " No other worker count's best repeat reaches its worst repeat." : "";
      } else if (others.length) {
        var next = Math.max.apply(null, others.map(function (r) { return r.samples_per_s; }));
        line += " One run per worker count, so the run-to-run spread is unknown: the best is " +
          esc(((best.samples_per_s / next - 1) * 100).toFixed(0)) + " % ahead of the next; treat differences of about " +
          "10 % or less as noise, or rerun with --repeat 3 for min-max whiskers.";
      }
      out.push(para(line, "headline"));
    } else {
      out.push(para("No worker count finished a run.", "headline warn"));
    }
    var counts = ok.map(function (r) { return r.runs; });
    var repeats = counts.some(function (n) { return n > 1; })
      ? list(d.runs).filter(function (r) { return r.status === "ok" && isNum(r.samples_per_s); }) : [];
    out.push(section("Throughput by worker count", xyChart({
      title: "Training samples/s vs DataLoader workers",
      sub: (counts.length ? repeatsText(counts, "worker count") : "") + "; axis from zero; green: the best" +
        (near.length ? ", orange: within run-to-run noise of it" : ""),
      xLabel: "DataLoader workers", yLabel: "training samples/s", xName: "workers",
      series: [
        { name: "samples/s (train duration, start-up included)", color: PALETTE[0], points: ok.map(function (r) {
          var repeated = r.runs > 1;
          return {
            x: r.workers, y: r.samples_per_s, lo: repeated ? r.samples_per_s_min : null, hi: repeated ? r.samples_per_s_max : null,
            fill: r === best ? "#2ca02c" : near.indexOf(r.workers) >= 0 ? "#ff7f0e" : null, big: r === best,
            label: r === best ? "best: " + r.workers : ""
          };
        }) },
        { name: "steady samples/s (first step left out, median)", color: "#999", dash: true, noMarkers: true,
          points: ok.map(function (r) { return { x: r.workers, y: r.steady_samples_per_s }; }) }
      ].concat(repeats.length ? [{ name: "each repeat", color: "#1f77b4", noLine: true, small: true,
        points: repeats.map(function (r) { return { x: r.workers, y: r.samples_per_s }; }) }] : [])
    })));
    var repeated = counts.some(function (n) { return n > 1; });
    var split = ok.map(function (r) {
      var sp = r.split || {}, wait = isNum(r.wait_frac) ? r.wait_frac : sp.wait, rest = sp.copy + sp.compute;
      if (!isNum(wait)) { return { label: r.workers + " workers", parts: null }; }
      if (isNum(rest) && rest > 0) {  // the input wait of the table; the rest of the step split as measured
        return { label: r.workers + " workers", parts: [wait, (1 - wait) * sp.copy / rest, (1 - wait) * sp.compute / rest] };
      }
      return { label: r.workers + " workers", parts: [wait, 0, 1 - wait] };
    });
    out.push(section("Step split", stacked({
      title: "Where the steady step time goes",
      sub: "waiting for the next batch, copying it to the device, compute (forward, backward, update); first step " +
        "left out" + (repeated ? "; input wait: median over repeats (as in the table), the rest split over all repeats" : ""),
      names: ["input wait", "copy to device", "compute"], colors: [SPLIT_COLORS.wait, SPLIT_COLORS.copy, SPLIT_COLORS.compute],
      items: split
    })));
    var tableRows = [], classes = [];
    rows.forEach(function (r) {
      classes.push(r.workers === d.best_workers ? "best" : "");
      if (!r.runs) {
        tableRows.push([esc(r.workers), "0", esc("failed (" + r.failed + ")"), "", "", "", "", "", "", "", "", ""]);
        return;
      }
      var spread = r.runs > 1 ? " [" + fmt(r.samples_per_s_min, 4) + "-" + fmt(r.samples_per_s_max, 4) + "]" : "";
      tableRows.push([
        esc(r.workers) + (r.workers === d.best_workers ? " <b>best</b>" : ""), esc(r.runs + (r.failed ? " (+" + r.failed + " failed)" : "")),
        esc(fmt(r.samples_per_s, 4) + spread), esc(fmt(r.speedup, 3) + "x"), esc(fmt(r.steady_samples_per_s, 4)),
        esc(fmt(r.train_s, 4)), esc(fmt(r.eval_s, 4)), esc(fmt(r.accuracy, 3)), esc(fmt(r.first_batch_s, 3)),
        esc(pct(r.wait_frac)), esc(fmt(r.peak_mem_mb, 4)), esc(isNum(r.cpu_util_pct) ? r.cpu_util_pct.toFixed(0) + " %" : "-")
      ]);
    });
    out.push(section("Per worker count", table(
      ["workers", "runs", repeated ? "samples/s [min-max]" : "samples/s", "speed-up vs " + get(d, "baseline_workers", "?"), "steady samples/s",
        "train (s)", "eval (s)", "test accuracy", "first batch (s)", "input wait", "peak mem (MiB)", "CPU util"],
      tableRows, [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1], classes) +
      para((repeated ? "Medians over repeats. " : "One run per worker count. ") + "<i>samples/s</i>: training samples over the train duration (worker start-up " +
        "included); <i>steady</i> leaves out the first step; <i>input wait</i>: share of the steady step time spent " +
        "waiting for the next batch.", "note")));
    var profiled = ok.filter(function (r) { return r.extra && r.extra.profile && r.extra.profile.dir; });
    if (profiled.length) {  // sweep --profile: RUN_DIR/profiles/<name>/report.html, beside this page
      out.push(section("Profiles", table(["workers", "profile (last repeat)", "rules fired"], profiled.map(function (r) {
        var name = String(r.extra.profile.dir).split("/").filter(Boolean).pop();
        return [esc(r.workers), '<a href="profiles/' + encodeURIComponent(name) + '/report.html">' + esc(name) + "</a>",
          esc(list(r.extra.profile.triggered).join(", ") || "none")];
      }), [1, 0, 0])));
    }
    var failures = [];
    rows.forEach(function (r) { list(r.errors).forEach(function (e) { failures.push(esc(r.workers + (r.workers === 1 ? " worker: " : " workers: ") + e)); }); });
    if (failures.length) { out.push(section("Failed runs", bullets(failures))); }
    var diagnosed = ok.filter(function (r) { return r.extra && r.extra.verdict; });
    if (diagnosed.length) {
      out.push(section("Bottleneck per worker count", table(["workers", "verdict", "shares", "secondary", "input-bound"],
        diagnosed.map(function (r) {
          var sh = r.extra.shares || {}, ctx = ((r.extra.diagnosis || {}).setting || {}).ctx || s.ctx;
          var verdict = stageLabel(r.extra.verdict, ctx) + (r.extra.stalled ? " (stalled in " + r.extra.stalled + ": the rounds before it)" : "");
          return [esc(r.workers), esc(verdict), esc(ordered(sh, STAGE_ORDER).map(function (k) { return stageLabel(k, ctx) + " " + pct(sh[k]); }).join(", ")),
            esc(list(r.extra.secondary).join(", ") || "-"), esc(get(r.extra, "input_bound", "-"))];
        }))));
    }
    var dp = ok.filter(function (r) { return r.extra && isNum(r.extra.comm_share); });
    if (dp.length) {
      out.push(section("Data-parallel step", table(["workers", "kvstore share", "kvstore ms/step", "parameters equal on every device"],
        dp.map(function (r) {
          return [esc(r.workers), esc(pct(r.extra.comm_share, 1)), esc(fmt(r.extra.kvstore_step_ms, 3)),
            r.extra.params_equal_on_devices ? "yes" : "<b>NO</b>"];
        }), [1, 1, 1, 0])));
    }
    out.push(runInfo(d.env, d.command, d.started_utc, d.finished_utc, [
      ["Settings", esc("pipeline " + get(s, "identity", get(s, "pipeline", get(s, "workload", "?"))) + ", batch size " + get(s, "batch_size", "?") + ", epochs " +
        get(s, "epochs", "?") + ", max batches " + (s.max_batches || "all") + ", repeats " + get(s, "repeat", "?") +
        ", thread pool " + get(s, "thread_pool", "?") + ", context " + get(s, "ctx", "?"))]
    ]));
    return out.join("");
  }

  // -- diagnosis --------------------------------------------------------------------------------------
  var STAGE_ORDER = ["preprocessing", "disk_io", "gpu_io"];
  var SUBSTAGE_ORDER = ["preprocessing", "read", "loader", "copy", "compute"];
  var PIPELINE_ORDER = ["source", "read", "decode", "transform", "loader", "copy", "step"];
  var DIAGNOSIS_SHOWN = ["verdict", "facts", "shares", "share_ci", "stages", "stage_ci", "probes", "recommendations", "evidence",
    "secondary", "input_bound", "wait_frac", "notes", "setting", "thresholds", "elapsed_s", "settled_s", "stop_reason",
    "rounds", "env", "started_utc", "label", "pipeline"];

  function ordered(obj, order) {
    var keys = Object.keys(obj || {});
    return order.filter(function (k) { return keys.indexOf(k) >= 0; })
      .concat(keys.filter(function (k) { return order.indexOf(k) < 0; }));
  }
  function shareBars(title, sub, values, intervals, order, labels) {
    values = values || {};
    intervals = intervals || {};
    labels = labels || {};
    return hBars({
      title: title, sub: sub, max: 1, labelWidth: 160, xLabel: "share of the step time",
      format: function (v) { return pct(v); }, tickFormat: function (t) { return (t * 100) + " %"; },
      items: ordered(values, order).map(function (k, i) {
        var c = intervals[k];
        return {
          label: labels[k] || k, value: values[k], lo: c && isNum(c[0]) ? c[0] : null, hi: c && isNum(c[1]) ? c[1] : null,
          color: PALETTE[i % PALETTE.length]
        };
      })
    });
  }

  function diagnosis(data) {
    var d = data.diagnosis || {}, probes = d.probes || {}, out = [];
    var order = list(data.probe_order).filter(function (k) { return probes[k]; });
    Object.keys(probes).forEach(function (k) { if (order.indexOf(k) < 0) { order.push(k); } });
    var shares = d.shares || {}, shareCi = d.share_ci || {};
    var gain = (d.speedups || {}).input, gainCi = list((d.speedup_ci || {}).input);
    var atLine = d.verdict === "inconclusive" && (d.analysis || {}).reuse === "at_line", digits = atLine ? 3 : 2;
    var facts = d.facts || {};  // what every report of the diagnosis states (gluonbench/diagnosis/facts.py)
    var gainText = facts.gain_text && facts.gain_text !== "?" ? esc(facts.gain_text) :
      isNum(gain) ? esc(gain.toFixed(digits)) + "x" + (gainCi.length === 2 && isNum(gainCi[0]) && isNum(gainCi[1]) ?
      " [" + esc(gainCi[0].toFixed(digits)) + ", " + esc(gainCi[1].toFixed(digits)) + "]" : "") : "";
    var labels = facts.share_labels || {};
    var waitText = facts.wait_text !== undefined ? facts.wait_text : (isNum(d.wait_frac) ? "input wait " + pct(d.wait_frac) +
      " of the full pipeline's step" : null);
    if (atLine) {
      out.push(para("<b>Verdict: inconclusive, at the line</b> (reusing one batch gains beyond the noise, " + gainText +
        ", but its interval crosses the input_gain line: too close to call)", "headline warn"));
    } else if (d.verdict === "inconclusive" && (d.analysis || {}).reuse === "short") {
      var fewest = (d.thresholds || {}).min_blocks;
      out.push(para("<b>Verdict: inconclusive</b> (too little data for a verdict: a probe has " +
        (isNum(fewest) ? "fewer than " + esc(String(fewest)) + " blocks" : "too few blocks") +
        (gainText ? "; so far a perfect input pipeline gains " + gainText : "") + ")", "headline warn"));
    } else if (d.verdict === "inconclusive") {
      out.push(para("<b>Verdict: inconclusive</b> (the noise exceeds the differences between the probes)", "headline warn"));
    } else if (d.verdict) {
      var secondary = facts.secondary_labels || list(d.secondary);
      out.push(para("<b>Verdict: " + esc(facts.verdict_label || d.verdict) + "</b> (" + esc(d.verdict) + ")" +
        (isNum(gain) ? " (the seed's rule: with a perfect input pipeline, one batch reused, training would be " +
          gainText + " faster)" : "") +
        (isNum(shares[d.verdict]) ? "; its removal saves " + esc(pct(shares[d.verdict])) +
        esc(pctCi(shareCi[d.verdict])) + " of the step time" : "") +
        (secondary.length ? "; secondary: " + esc(secondary.join(", ")) : "") +
        (facts.input_bound || d.input_bound ? "; input-bound: " + esc(facts.input_bound || d.input_bound) +
          (waitText ? " (" + esc(waitText) + ")" : "") : ""), "headline"));
      var bound = (d.analysis || {}).bound || {}, read = (d.analysis || {}).read || {};
      if (bound.text) { out.push(para(esc(bound.text))); }
      if (read.why && ["unknown", "none"].indexOf(read.kind) < 0) {
        out.push(para("dataset[i] is " + esc(read.name) + " (" + esc(read.headline) + "): " + esc(read.why)));
      }
    }
    if (d.pipeline && typeof d.pipeline === "object") {
      out.push(section("Pipeline", h("div", ordered(d.pipeline, PIPELINE_ORDER).map(function (k, i) {
        return (i ? '<span class="arrow">&rarr;</span>' : "") + '<span class="stage"><b>' + esc(k) + "</b>" +
          esc(d.pipeline[k]) + "</span>";
      }).join(""), 'class="chain"')));
    }
    var widest = 0;
    order.forEach(function (k) { var p = probes[k]; if (p && !p.same_as && isNum(p.rel_half_width)) { widest = Math.max(widest, p.rel_half_width); } });
    out.push(section("Probe chain", hBars({
      title: "Samples/s of each probe, in pipeline order",
      sub: "each probe swaps stages for ready-made stand-ins; median with its 95 % CI" +
        (isNum(d.rounds) ? " over " + d.rounds + " interleaved round" + (d.rounds === 1 ? "" : "s") : "") + "; axis from zero",
      xLabel: "samples/s", labelWidth: 130,
      items: order.map(function (k, i) {
        var p = probes[k] || {}, c = p.samples_per_s_ci || [];
        if (p.same_as) { return { label: k, value: null, note: "= " + p.same_as + " (the same pipeline here)" }; }
        return { label: k, value: p.samples_per_s, lo: c[0], hi: c[1], color: PALETTE[i % PALETTE.length], bold: k === "full" };
      })
    }) + table(["probe", "removes", "samples/s", "95 % CI", "step (ms)", "+-CI", "input wait", "copy", "compute"],
      order.map(function (k) {
        var p = probes[k] || {}, sp = p.split || {}, total = sp.total_s || 0;
        if (p.same_as) { return [esc(k), esc(p.removes || ""), esc("= " + p.same_as), "", "", "", "", "", ""]; }
        function part(key) { return total ? pct((sp[key] || 0) / total) : "-"; }
        return [esc(k), esc(p.removes || ""), esc(fmt(p.samples_per_s, 4)), esc(ci(p.samples_per_s_ci, function (v) { return fmt(v, 4); })),
          esc(fmt(isNum(p.step_s) ? p.step_s * 1000 : null, 3)), esc(isNum(p.rel_half_width) ? (p.rel_half_width * 100).toFixed(1) + " %" : "-"),
          esc(part("wait_s")), esc(part("copy_s")), esc(part("compute_s"))];
      }), [0, 0, 1, 1, 1, 1, 1, 1, 1])));
    var shareHtml = "";
    if (Object.keys(shares).length) {
      shareHtml += shareBars("Shares of the step time", "each bar's whisker: its 95 % interval", shares, shareCi, STAGE_ORDER, labels);
    }
    if (d.stages && Object.keys(d.stages).length) {
      shareHtml += shareBars("Sub-stages, each measured by its own probe", "each bar's whisker: its 95 % interval",
        d.stages, d.stage_ci, SUBSTAGE_ORDER);
    }
    if (shareHtml) { out.push(section("Shares", shareHtml)); }
    var measured = [];
    if (isNum(d.rounds)) { measured.push(d.rounds + " interleaved round" + (d.rounds === 1 ? "" : "s")); }
    if (isNum(d.elapsed_s)) { measured.push("in " + d.elapsed_s.toFixed(1) + " s"); }
    if (d.stop_reason) { measured.push("stopped: " + d.stop_reason); }
    if (isNum(d.settled_s)) { measured.push("verdict reached after " + d.settled_s.toFixed(1) + " s"); }
    if (widest) { measured.push("widest 95 % CI +-" + (widest * 100).toFixed(1) + " % of a median"); }
    out.push(section("Measurement", para(esc(measured.join("; ") || "-")) + bullets(list(d.notes).map(function (n) {
      return "Note: " + esc(n);
    }))));
    if (list(d.recommendations).length) {
      out.push(section("Recommendations", h("ol", d.recommendations.map(function (r) { return h("li", esc(r)); }).join(""))));
    }
    if (list(d.evidence).length) { out.push(section("Evidence (psutil, per probe)", bullets(d.evidence.map(esc)))); }
    var setting = d.setting || {};
    out.push(runInfo(d.env, "", d.started_utc, "", [
      ["Setting", Object.keys(setting).length ? esc(Object.keys(setting).map(function (k) { return k + " " + setting[k]; }).join(", ")) : ""],
      ["Thresholds", d.thresholds ? esc(Object.keys(d.thresholds).map(function (k) { return k + " " + d.thresholds[k]; }).join(", ")) : ""]
    ]));
    var more = Object.keys(d).filter(function (k) { return DIAGNOSIS_SHOWN.indexOf(k) < 0; });
    if (more.length) {
      out.push(section("More fields of the diagnosis", more.map(function (k) {
        return h("details", h("summary", code(k)) + generic(d[k]), ["analysis", "advice"].indexOf(k) < 0 ? "open" : "");
      }).join("")));
    }
    return out.join("");
  }

  // -- tune ----------------------------------------------------------------------------------------------
  function settingText(s) {
    s = s || {};
    return Object.keys(s).filter(function (k) { return s[k] !== null && s[k] !== undefined; })
      .map(function (k) { return k + "=" + s[k]; }).join(", ");
  }
  function tune(d) {
    var out = [], evidence = list(d.evidence), rec = list(d.ci), cur = list(d.current_ci);
    var overlap = isNum(rec[0]) && isNum(cur[1]) && isNum(rec[1]) && isNum(cur[0]) && rec[0] <= cur[1] && cur[0] <= rec[1] &&
      JSON.stringify(d.setting) !== JSON.stringify(d.current);
    var same = JSON.stringify(d.setting) === JSON.stringify(d.current) && d.batch_size === d.current_batch_size;
    var ceil = list(d.ceiling_ci), aboveCeiling = isNum(d.of_ceiling) && d.of_ceiling > 1;
    out.push(para("<b>Recommended:</b> " + code(d.dataloader || "?") + (same ? " (the current setting)" : "") + "<br>expected " +
      esc(fmt(d.samples_per_s, 4)) + " samples/s" + (ci(d.ci) ? " [" + esc(ci(d.ci)) + "]" : "") + ", " +
      (same ? "" : esc(isNum(d.speedup) ? d.speedup.toFixed(2) + "x" : "n/a") + " the current setting, ") + esc(pct(d.of_ceiling)) +
      " of the model ceiling" + (aboveCeiling ? " (above it: " + (isNum(ceil[1]) && d.samples_per_s <= ceil[1]
        ? "inside the ceiling's 95 % CI, so the two are indistinguishable on this run)"
        : "the ceiling's estimate is off on this run)") : "") + (overlap ? "; their 95 % CIs overlap, so on this run the difference from the current " +
        "setting is within noise" : "") + (d.lr_note ? "<br>" + esc(d.lr_note) : ""), "headline"));
    var cut = list(d.skipped).filter(function (s) { return /^(no block measured|budget)/.test(String(s.reason || "")); });
    if (cut.length) {
      out.push(para("The " + esc(d.budget_s) + " s budget ran out before " + esc(cut.map(function (s) { return s.what; }).join("; ")) +
        ": this is the best of what was measured, maybe not the best there is.", "headline warn"));
    }
    out.push(section("Expected throughput", hBars({
      title: "Current setting, recommendation and the model ceiling",
      sub: "samples/s, median with its 95 % CI; the ceiling steps one cached batch (a perfect loader); axis from zero",
      xLabel: "samples/s", labelWidth: 260,
      items: [
        { label: "current setting (batch " + get(d, "current_batch_size", "?") + ")",
          value: d.current_samples_per_s, lo: list(d.current_ci)[0], hi: list(d.current_ci)[1], color: "#7f7f7f" },
        { label: "recommended (batch " + get(d, "batch_size", "?") + ")", value: d.samples_per_s, lo: list(d.ci)[0], hi: list(d.ci)[1],
          color: "#2ca02c", bold: true },
        { label: "model ceiling", value: d.ceiling_samples_per_s, lo: list(d.ceiling_ci)[0], hi: list(d.ceiling_ci)[1], color: "#1f77b4" }
      ]
    }) + kv([["Recommended setting", esc(settingText(d.setting))], ["Current setting", esc(settingText(d.current))]])));
    if (d.emulated) {
      var e = d.emulated;
      out.push(section("Emulated compute", para(esc(e.text || "") + "<br>AU " + esc(pct(e.au)) + " (" +
        (e.passes ? "passes" : "fails") + " DLIO's " + esc(pct(e.pass_line)) + " line); current setting AU " +
        esc(pct(e.au_current)) + " (" + (e.passes_current ? "passes" : "fails") + ")")));
    }
    var phases = [];
    evidence.forEach(function (ev) { if (phases.indexOf(ev.phase) < 0) { phases.push(ev.phase); } });
    out.push(section("Evidence", hBars({
      title: "Every measurement the search made",
      sub: "samples/s, median with its 95 % CI; colour by phase: " + phases.join(", ") + "; axis from zero",
      xLabel: "samples/s", labelWidth: 300, right: 260,
      items: evidence.map(function (ev) {
        var c = list(ev.ci), label = ev.phase + ": " + ev.label;
        return {
          label: label.length > 52 ? label.slice(0, 50) + "..." : label,
          value: ev.status === "ok" ? ev.samples_per_s : null, lo: c[0], hi: c[1],
          note: ev.status === "ok" ? (isNum(ev.cpu_cores) ? ev.cpu_cores.toFixed(2) + " cores busy" : "") : "FAILED: " + ev.error,
          color: PALETTE[phases.indexOf(ev.phase) % PALETTE.length]
        };
      })
    })));
    var batches = list(d.batch_sizes);
    if (batches.length) {
      out.push(section("Per batch size", table(["batch size", "best setting", "samples/s [95 % CI]", "within noise of it", "search stopped"],
        batches.map(function (b) {
          return [esc(b.batch_size), esc(settingText(b.setting)), esc(fmt(b.samples_per_s, 4) + (ci(b.ci) ? " [" + ci(b.ci) + "]" : "")),
            esc(list(b.within_noise).join("; ") || "-"), esc(b.stop_reason || "")];
        }), [1, 0, 1, 0, 0])));
    }
    if (list(d.tried).length) { out.push(section("Tried", para(esc(d.tried.join("; "))))); }
    if (list(d.skipped).length) {
      out.push(section("Skipped", bullets(d.skipped.map(function (s) { return esc(s.what + ": " + s.reason); }))));
    }
    out.push(runInfo(d.env, d.command, d.started_utc, "", [
      ["Search", esc(fmt(d.elapsed_s, 3) + " s of a " + fmt(d.budget_s, 3) + " s budget, " + get(d, "cores", "?") + " cores, " +
        get(d, "ctx", "?"))]
    ]));
    return out.join("");
  }

  // -- io ------------------------------------------------------------------------------------------------
  var MODE_COLORS = { file: "#1f77b4", fastfile: "#ff7f0e", pipe: "#2ca02c" };
  function cellLabel(c) { return c.size + " / " + c.layout + " / " + c.mode; }
  function io(d) {
    var out = [], rows = list(d.rows), ok = rows.filter(function (r) { return r.status === "ok"; }), s = d.settings || {};
    var advice = list(d.advice);
    out.push(advice.length
      ? h("div", "<b>Recommendation</b> (from the numbers below, seed 004's rules)" +
        bullets(advice.map(function (a) { return esc(a.text); })), 'class="headline"')
      : para("No cell finished; nothing to recommend.", "headline warn"));
    out.push(section("Read throughput per cell", hBars({
      title: "MB/s over all epochs, by data set / layout / input mode",
      sub: "one run per cell (no spread measured); colour by input mode; axis from zero",
      xLabel: "MB/s", labelWidth: 200,
      items: rows.map(function (r) {
        return { label: cellLabel(r.cell), value: r.status === "ok" ? r.read_mb_per_s : null,
          note: r.status === "ok" ? "" : "failed: " + r.error, color: MODE_COLORS[r.cell.mode] };
      })
    }) + hBars({
      title: "Start-up to the first batch",
      sub: "listing, File mode's copy, the Pipe producer's start and the first read; axis from zero",
      xLabel: "seconds", labelWidth: 200,
      items: ok.map(function (r) { return { label: cellLabel(r.cell), value: r.startup_s, color: MODE_COLORS[r.cell.mode] }; })
    })));
    var emulated = rows.some(function (r) { return r.emulated; });
    out.push(section("Cells", table(["data set", "layout", "mode", "objects", "start-up (s)", "copy (s)", "MB/s [per epoch]", "samples/s",
      "total (s)", "disk used", "cache before"].concat(emulated ? ["AU"] : []), rows.map(function (r) {
        var c = r.cell, o = r.open || {};
        if (r.status !== "ok") {
          return [esc(c.size), esc(c.layout), esc(c.mode), esc(c.objects), esc("failed: " + r.error), "", "", "", "", "", ""].concat(emulated ? [""] : []);
        }
        return [esc(c.size), esc(c.layout), esc(c.mode), esc(c.objects), esc(fmt(r.startup_s, 3)), esc(o.copy_s ? fmt(o.copy_s, 3) : "-"),
          esc(fmt(r.read_mb_per_s, 4) + " [" + list(r.epochs).map(function (e) { return fmt(e.mb_per_s, 3); }).join(", ") + "]"),
          esc(fmt(r.samples_per_s, 4)), esc(fmt(r.total_s, 3)), esc(r.disk_used ? fmt(r.disk_used / 1e6, 3) + " MB" : "-"),
          esc(pct(r.resident_before))].concat(emulated ? [esc(r.emulated ? pct(r.emulated.au) + (r.emulated.passes ? " (pass)" : " (below 90 %)") : "-")] : []);
      }), [0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1])));
    out.push(runInfo(d.env, d.command, d.started_utc, d.finished_utc, [
      ["Settings", esc("stage " + get(s, "stage", "?") + ", epochs " + get(s, "epochs", "?") + ", batch " + get(s, "batch_size", "?") +
        ", " + get(s, "threads", "?") + " reader threads, shuffle " + get(s, "shuffle", "?") + ", page cache " + get(s, "page_cache", "?"))],
      ["Data sets", esc(s.datasets_note || "")]
    ]));
    return out.join("");
  }

  // -- scaling (records of kind "dist") ---------------------------------------------------------------
  function scaling(d) {
    var out = [], rows = list(d.rows), jobs = list(d.jobs), s = d.settings || {};
    var loaders = [];
    rows.forEach(function (r) { if (loaders.indexOf(r.workers) < 0) { loaders.push(r.workers); } });
    var hosts = [];
    rows.forEach(function (r) { if (hosts.indexOf(r.hosts) < 0) { hosts.push(r.hosts); } });
    var series = [], counts = [];
    loaders.forEach(function (w, n) {
      var mine = rows.filter(function (r) { return r.workers === w && r.jobs > 0; });
      series.push({ name: "measured, loader " + w, color: PALETTE[n % PALETTE.length], points: mine.map(function (r) {
        var js = jobs.filter(function (j) { return j.ok && j.hosts === r.hosts && j.workers === r.workers; })
          .map(function (j) { return j.samples_per_s; }).filter(isNum);
        counts.push(js.length);
        return { x: r.hosts, y: r.samples_per_s, lo: js.length > 1 ? Math.min.apply(null, js) : null,
          hi: js.length > 1 ? Math.max.apply(null, js) : null,
          below: r.hosts === 1 ? "baseline" : isNum(r.efficiency) ? pct(r.efficiency) + " of ideal" : "" };
      }) });
      series.push({ name: "ideal (linear), loader " + w, color: PALETTE[n % PALETTE.length], dash: true, noMarkers: true,
        points: mine.map(function (r) { return { x: r.hosts, y: r.ideal_samples_per_s }; }) });
    });
    var best = rows.filter(function (r) { return r.jobs > 0 && isNum(r.efficiency) && r.hosts > 1; });
    out.push(para(best.length ? best.map(function (r) {
      return "<b>" + esc(r.hosts) + " workers</b> (loader " + esc(r.workers) + "): " + esc(fmt(r.samples_per_s, 4)) +
        " samples/s, " + esc(pct(r.efficiency)) + " of linear scaling";
    }).join("<br>") : "No multi-worker job finished with a 1-worker baseline to compare against.", best.length ? "headline" : "headline warn"));
    out.push(section("Aggregate throughput", xyChart({
      title: "Aggregate steady samples/s vs kvstore workers",
      sub: (counts.length ? repeatsText(counts, "setting") : "") + "; dashed: ideal (the 1-worker figure times the workers); axis from zero",
      xLabel: "kvstore workers", yLabel: "aggregate samples/s", xName: "workers", xTicks: hosts, series: series
    })));
    out.push(section("Step split", stacked({
      title: "Summed steady step time of all workers",
      sub: "kvstore push/pull is part of compute, drawn apart here",
      names: ["input wait", "copy", "compute (no kvstore)", "kvstore"],
      colors: [SPLIT_COLORS.wait, SPLIT_COLORS.copy, SPLIT_COLORS.compute, SPLIT_COLORS.kvstore],
      items: rows.filter(function (r) { return r.jobs > 0; }).map(function (r) {
        var comm = isNum(r.comm_share) ? r.comm_share : 0;
        return { label: r.hosts + " workers, loader " + r.workers,
          parts: isNum(r.compute_share) ? [r.wait_share, r.copy_share, Math.max(r.compute_share - comm, 0), comm] : null };
      })
    })));
    out.push(section("Per setting", table(["workers (dist)", "loader", "global batch", "samples/s", "ideal", "efficiency",
      "slowest worker (rank: samples/s)", "input wait", "kvstore", "start-up (s)", "test accuracy", "params identical"],
      rows.map(function (r) {
        if (!r.jobs) { return [esc(r.hosts), esc(r.workers), esc(r.global_batch), esc("failed (" + r.failed + ")"), "", "", "", "", "", "", "", ""]; }
        var async = String(s.kvstore || "").indexOf("async") >= 0;
        return [esc(r.hosts), esc(r.workers), esc(r.global_batch), esc(fmt(r.samples_per_s, 4)), esc(fmt(r.ideal_samples_per_s, 4)),
          esc(pct(r.efficiency)), esc(r.slowest_rank + ": " + fmt(r.slowest_samples_per_s, 4)), esc(pct(r.wait_share)),
          esc(pct(r.comm_share)), esc(fmt(r.startup_s, 3)), esc(fmt(r.accuracy, 3)),
          r.params_identical ? "yes" : async ? "no (async: expected)" : "<b>NO</b>"];
      }), [1, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 0])));
    var failed = jobs.filter(function (j) { return !j.ok; });
    if (failed.length) {
      out.push(section("Failed jobs", bullets(failed.map(function (j) {
        return esc(j.hosts + " workers, loader " + j.workers + ", repeat " + j.repeat + ": " + j.error);
      }))));
    }
    var diagnosed = list(d.diagnoses).filter(function (x) { return x.verdict; });
    if (diagnosed.length) {
      out.push(section("Bottleneck of the diagnosed worker", table(["workers (dist)", "loader", "repeat", "rank", "verdict", "shares"],
        diagnosed.map(function (x) {
          var sh = x.shares || {}, ctx = list((d.settings || {}).gpus).length ? "gpu" : "cpu";
          return [esc(x.hosts), esc(x.workers), esc(x.repeat), esc(x.rank), esc(stageLabel(x.verdict, ctx)),
            esc(ordered(sh, STAGE_ORDER).map(function (k) { return stageLabel(k, ctx) + " " + pct(sh[k]); }).join(", "))];
        }))));
    }
    out.push(runInfo(d.env, s.command, d.started_utc, d.finished_utc, [
      ["Settings", esc("pipeline " + get(s, "identity", get(s, "pipeline", get(s, "workload", "?"))) + ", kvstore " + get(s, "kvstore", "?") + ", launcher " +
        get(s, "launcher", "?") + ", per-device batch " + get(s, "batch_size", "?") + ", servers " + get(s, "servers", "?") +
        ", repeats " + get(s, "repeat", "?"))]
    ]));
    return out.join("");
  }

  var RENDERERS = { run: sweep, diagnosis: diagnosis, tune: tune, io: io, dist: scaling };

  var render = RENDERERS[payload.kind];
  if (render) {
    try {
      root.insertAdjacentHTML("afterbegin", render(payload.data || {}));
    } catch (err) {
      root.insertAdjacentHTML("afterbegin", para("This page could not draw its report: " + esc(err) +
        ". The records are embedded in the page source (script #gluonbench-data).", "headline warn"));
      throw err;
    }
  }
}());
