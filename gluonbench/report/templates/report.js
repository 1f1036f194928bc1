/* gluonbench report.html renderer: writes a run folder's report from the JSON embedded in the page.
   No network, no library: the headline, tables and text are HTML written here; the charts are the
   report's matplotlib figures, inlined in the page as SVG by Python (gluonbench/report/charts.py),
   which this script moves into their sections. One renderer per kind of run folder (the "kind" of
   its records); fields a renderer does not know are shown as tables. */
(function () {
  "use strict";

  var payload = JSON.parse(document.getElementById("gluonbench-data").textContent);
  var root = document.getElementById("report");

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

  // -- charts ------------------------------------------------------------------------------------
  /* A place for the chart inlined as <figure id="chart-NAME"> (moved there once the page is written),
     or a note when the report has no such chart (nothing measured). */
  function chart(name, missing) {
    return document.getElementById("chart-" + name) ? '<div class="chart-slot" data-chart="' + esc(name) + '"></div>'
      : para(esc(missing), "note");
  }
  function placeCharts() {
    Array.prototype.forEach.call(root.querySelectorAll("div.chart-slot"), function (slot) {
      var figure = document.getElementById("chart-" + slot.getAttribute("data-chart"));
      if (figure) { slot.parentNode.replaceChild(figure, slot); }
    });
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
  // a headline stage as reports name it (gluonbench/report/exporters.py stage_label)
  var STAGE_LABEL = { preprocessing: "preprocessing", disk_io: "disk I/O", gpu_io: "GPU I/O" };
  function stageLabel(k, ctx) {
    if (k === "gpu_io" && ctx && String(ctx).indexOf("gpu") !== 0) { return "model compute (CPU)"; }
    return STAGE_LABEL[k] || k;
  }

  // -- sweep (records of kind "run") ----------------------------------------------------------------
  function workersAfter(counts) { return counts.length === 1 && counts[0] === 1 ? " worker" : " workers"; }
  function sweep(d) {
    var rows = list(d.rows), ok = rows.filter(function (r) { return r.runs > 0 && isNum(r.samples_per_s); });
    var best = ok.filter(function (r) { return r.workers === d.best_workers; })[0];
    var near = list(d.near_best), s = d.settings || {}, out = [];
    if (best && d.best_named === false) {
      var tied = list(d.within_noise);
      out.push(para("<b>Best worker count: " + esc(d.best_note) + "</b>. The fastest: " + esc(best.workers) + " worker" +
        (best.workers === 1 ? "" : "s") + ", " + esc(fmt(best.samples_per_s, 4)) + " samples/s." +
        (tied.length ? " Also within noise of it: " + esc(tied.join(", ")) + workersAfter(tied) + "; of those, fewer workers cost " +
          "less CPU and memory." : ""), "headline warn"));
    } else if (best) {
      var line = "<b>Best worker count: " + best.workers + "</b>, " + esc(fmt(best.samples_per_s, 4)) + " samples/s" +
        (best.workers === d.baseline_workers ? " (the fewest workers measured)." : " (" + esc(fmt(best.speedup, 3)) + "x the " +
          esc(d.baseline_workers) + "-worker throughput).");
      var others = ok.filter(function (r) { return r !== best; });
      if (best.runs > 1) {
        line += near.length
          ? " Within run-to-run noise of it: " + esc(near.join(", ")) + workersAfter(near) + " (their best repeat reaches its worst); " +
            "of those, fewer workers cost less CPU and memory."
          : others.length ? " No other worker count's best repeat reaches its worst repeat." : "";
      } else if (others.length) {
        var next = Math.max.apply(null, others.map(function (r) { return r.samples_per_s; }));
        line += " One run per worker count: the best is " +
          esc(((best.samples_per_s / next - 1) * 100).toFixed(0)) + " % ahead of the next, more than the spread of " +
          "the blocks within the two runs; the run-to-run spread is unknown: rerun with --repeat 3 for min-max whiskers.";
      }
      out.push(para(line, "headline"));
    } else {
      out.push(para("No worker count finished a run.", "headline warn"));
    }
    var repeated = ok.some(function (r) { return r.runs > 1; });
    out.push(section("Throughput by worker count", chart("throughput", "Throughput: no worker count finished a run.")));
    out.push(section("Step split", chart("split", "Step split: not recorded.")));
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
        "waiting for the next batch" + (/^gpu/.test(String(s.ctx || "cpu")) ? "" : " (blocked in next(loader); on a CPU " +
        "context that includes the previous step's compute, which MXNet's one engine queue runs beside the loader's " +
        "NDArray work, so it is not the input pipeline's own cost: gluonbench diagnose measures that)") + ".", "note")));
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
    out.push(section("Probe chain", chart("probes", "Probe chain: nothing measured.") + table(["probe", "removes", "samples/s", "95 % CI", "step (ms)", "+-CI", "input wait", "copy", "compute"],
      order.map(function (k) {
        var p = probes[k] || {}, sp = p.split || {}, total = sp.total_s || 0;
        if (p.same_as) { return [esc(k), esc(p.removes || ""), esc("= " + p.same_as), "", "", "", "", "", ""]; }
        function part(key) { return total ? pct((sp[key] || 0) / total) : "-"; }
        return [esc(k), esc(p.removes || ""), esc(fmt(p.samples_per_s, 4)), esc(ci(p.samples_per_s_ci, function (v) { return fmt(v, 4); })),
          esc(fmt(isNum(p.step_s) ? p.step_s * 1000 : null, 3)), esc(isNum(p.rel_half_width) ? (p.rel_half_width * 100).toFixed(1) + " %" : "-"),
          esc(part("wait_s")), esc(part("copy_s")), esc(part("compute_s"))];
      }), [0, 0, 1, 1, 1, 1, 1, 1, 1])));
    if (Object.keys(shares).length || (d.stages && Object.keys(d.stages).length)) {
      out.push(section("Shares", chart("shares", "Shares: not recorded.")));
    }
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
    var out = [], rec = list(d.ci), cur = list(d.current_ci);
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
    var said = [["Against the model ceiling", d.ceiling_text], ["Model fed", d.fed_text], ["Sweep", d.sweep_text]]
      .filter(function (x) { return x[1]; });
    if (said.length) { out.push(para(said.map(function (x) { return "<b>" + esc(x[0]) + ":</b> " + esc(x[1]); }).join("<br>"))); }
    out.push(section("Expected throughput", chart("expected", "Expected throughput: not measured.") + kv([["Recommended setting", esc(settingText(d.setting))], ["Current setting", esc(settingText(d.current))]])));
    if (d.emulated) {
      var e = d.emulated;
      out.push(section("Emulated compute", para(esc(e.text || "") + "<br>AU " + esc(pct(e.au)) + " (" +
        (e.passes ? "passes" : "fails") + " DLIO's " + esc(pct(e.pass_line)) + " line); current setting AU " +
        esc(pct(e.au_current)) + " (" + (e.passes_current ? "passes" : "fails") + ")")));
    }
    out.push(section("Evidence", chart("evidence", "Evidence: no measurement.")));
    var batches = list(d.batch_sizes);
    if (batches.length) {
      out.push(section("Per batch size", table(["batch size", "best setting", "samples/s [95 % CI]", "within noise of it", "search stopped"],
        batches.map(function (b) {
          return [esc(b.batch_size), esc(settingText(b.setting)), esc(fmt(b.samples_per_s, 4) + (ci(b.ci) ? " [" + ci(b.ci) + "]" : "")),
            esc(list(b.within_noise).join("; ") || "-"), esc(b.stop_text || b.stop_reason || "")];
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
  function io(d) {
    var out = [], rows = list(d.rows), s = d.settings || {};
    var advice = list(d.advice);
    out.push(advice.length
      ? h("div", "<b>Recommendation</b> (from the numbers below, seed 004's rules)" +
        bullets(advice.map(function (a) { return esc(a.text); })), 'class="headline"')
      : para("No cell finished; nothing to recommend.", "headline warn"));
    out.push(section("Read throughput per cell", chart("throughput", "No cell finished.")));
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
    var best = rows.filter(function (r) { return r.jobs > 0 && isNum(r.efficiency) && r.hosts > 1; });
    out.push(para(best.length ? best.map(function (r) {
      return "<b>" + esc(r.hosts) + " workers</b> (loader " + esc(r.workers) + "): " + esc(fmt(r.samples_per_s, 4)) +
        " samples/s, " + esc(pct(r.efficiency)) + " of linear scaling";
    }).join("<br>") : "No multi-worker job finished with a 1-worker baseline to compare against.", best.length ? "headline" : "headline warn"));
    out.push(section("Aggregate throughput", chart("throughput", "No job finished.")));
    out.push(section("Step split", chart("split", "Step split: not recorded.")));
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
      placeCharts();
    } catch (err) {
      root.insertAdjacentHTML("afterbegin", para("This page could not draw its report: " + esc(err) +
        ". The records are embedded in the page source (script #gluonbench-data).", "headline warn"));
      throw err;
    }
  }
}());
