// The docab run viewer. Draws the data embedded in #docab-data (see harness/viewer/page.py) and
// loads each transcript on demand from transcripts/<n>.js, a script that calls
// docabTranscriptLoaded(n, data): file:// pages may not fetch(), but they may load scripts.
// Every piece of data reaches the page through textContent or a validated attribute, never as HTML.
"use strict";
(function () {
  const DATA = JSON.parse(document.getElementById("docab-data").textContent);
  const app = document.getElementById("app");
  const ARMS = DATA.arms;
  const QUESTIONS = DATA.questions;
  const BY_QID = new Map(QUESTIONS.map((q, i) => [q.qid, i]));
  const OUTCOME_LABELS = {
    correct: "correct", partial: "partial", wrong: "wrong", error: "error", timeout: "timeout",
    limit: "limit hit", mixed: "mixed", missing: "not run", unextracted: "extraction failed",
  };

  // -- small helpers ----------------------------------------------------------------------------
  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(props || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }
  const isNum = (v) => typeof v === "number" && Number.isFinite(v);
  const GROUPED = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });
  function count(v) {
    if (!isNum(v)) return "–";
    const a = Math.abs(v);
    if (a >= 1e6) return (v / 1e6).toFixed(2) + "M";
    if (a >= 1e4) return (v / 1e3).toFixed(1) + "k";
    if (a >= 100 || Number.isInteger(v)) return GROUPED.format(v);
    return v.toFixed(1);
  }
  // US dollars as the report shows them: $12.34, $0.0123 (three significant figures under a dollar), $0.
  function usd(v) {
    if (v === null || v === undefined) return "price unknown";
    if (!isNum(v)) return "–";
    if (v === 0) return "$0";
    const a = Math.abs(v);
    if (a >= 1000) return "$" + GROUPED.format(v);
    if (a >= 1) return "$" + v.toFixed(2);
    return "$" + v.toFixed(Math.max(2, 2 - Math.floor(Math.log10(a))));
  }
  function secs(v) {
    if (!isNum(v)) return "–";
    if (v < 0.01) return (v * 1000).toFixed(1) + " ms";
    if (v < 1) return (v * 1000).toFixed(0) + " ms";
    if (v < 10) return v.toFixed(2) + " s";
    return v.toFixed(1) + " s";
  }
  const score = (v) => (isNum(v) ? v.toFixed(2) : "–");
  const pct = (v) => (isNum(v) ? (v * 100).toFixed(0) + " %" : "–");
  function pill(kind, extra) {
    return el("span", { class: "pill " + kind, text: (OUTCOME_LABELS[kind] || kind) + (extra || "") });
  }
  function textBlock(text, cls) {
    return el("pre", { class: cls === undefined ? "text" : cls, text: text });
  }
  function fold(summary, body, open) {
    return el("details", { open: !!open }, el("summary", { text: summary }), body);
  }
  function usageText(u) {
    if (!u) return "";
    let text = "in " + count(u.input);
    if (u.cache_read) text += " (cached " + count(u.cache_read) + ")";
    if (u.cache_write) text += " (cache write " + count(u.cache_write) + ")";
    text += " · out " + count(u.output);
    if (u.reasoning) text += " (reasoning " + count(u.reasoning) + ")";
    return text;
  }

  // -- overview: header, summary, plots -----------------------------------------------------------
  function header() {
    const run = DATA.run;
    const facts = [
      ["dataset", run.dataset],
      ["model", run.models.join(", ")],
      ["arms", run.arms.map((a) => a.name + (a.tools ? " (" + a.tools + ")" : "")).join(" · ")],
      ["questions", count(run.questions)],
      ["records", count(run.records)],
      ["epochs", count(run.epochs)],
      ["created", run.created_at],
      ["git", run.git],
      ["shard", run.shard],
      ["merged from", run.merged_from ? run.merged_from + " runs" : ""],
    ].filter(([, v]) => v);
    const card = el("section", { class: "card" },
      el("div", { class: "run-header" },
        el("h1", { text: DATA.title }),
        run.description ? el("div", { class: "description", text: run.description }) : null),
      el("div", { class: "facts" }, facts.map(([k, v]) => el("span", {}, el("b", { text: k }), v))),
      DATA.floor ? el("div", { class: "banner", text: "Floor: an arm in this run is an " + DATA.label + "." }) : null);
    const warnings = [...new Set(DATA.warnings.concat(DATA.summary.warnings || []))];  // a computed summary repeats the run's
    if (warnings.length) card.append(el("ul", { class: "warnings" }, warnings.map((w) => el("li", { text: w }))));
    return card;
  }

  function sectionTable(section) {
    return el("div", { class: "summary-block" },
      el("h3", { text: section.title }),
      el("div", { class: "table-wrap" },
        el("table", { class: "summary" },
          el("thead", {}, el("tr", {}, section.headers.map((h, i) => el("th", { class: i ? "num" : "", text: h })))),
          el("tbody", {}, section.rows.length
            ? section.rows.map((row) => el("tr", {}, row.map((c, i) => el("td", { class: i ? "num" : "", text: c }))))
            : el("tr", {}, el("td", { colspan: section.headers.length, class: "muted", text: "(none)" }))))),
      section.notes.length ? el("ul", { class: "section-notes" }, section.notes.map((n) => el("li", { text: n }))) : null);
  }

  function summary() {
    const s = DATA.summary;
    const card = el("section", { class: "card", id: "summary" }, el("h2", { text: "Summary" }));
    if (!s.sections.length) {
      card.append(el("p", { class: "muted", text: s.note || "No summary: run docab report on this run." }));
      return card;
    }
    if (s.note) card.append(el("p", { class: "muted small", text: s.note }));
    const headline = s.sections.filter((x) => x.title === "Arms" || x.title.includes(" vs "));
    const rest = s.sections.filter((x) => !headline.includes(x));
    headline.forEach((x) => card.append(sectionTable(x)));
    if (rest.length) {
      card.append(el("div", { class: "summary-block" },
        fold("More: " + rest.map((x) => x.title.replace(/ \(.*\)$/, "").toLowerCase()).join(", "),
          el("div", {}, rest.map(sectionTable), el("p", { class: "muted small", text: s.method })))));
    }
    return card;
  }

  function plotGrid(list) {
    return el("div", { class: "plots" }, list.map((p) => el("figure", {},
      el("a", { href: p.src, target: "_blank", rel: "noopener" }, el("img", { src: p.src, alt: p.title, loading: "lazy" })),
      el("figcaption", { text: p.title }))));
  }

  function plots() {
    if (!DATA.plots.length) return null;
    const headline = DATA.plots.filter((p) => p.headline);
    const more = DATA.plots.filter((p) => !p.headline);
    return el("section", { class: "card", id: "plots" },
      el("h2", { text: "Plots" }),
      plotGrid(headline),
      more.length ? el("div", { class: "more-plots" },
        fold("More plots: " + more.map((p) => p.title.toLowerCase()).join(", "), plotGrid(more))) : null);
  }

  // -- the question table -------------------------------------------------------------------------
  const state = { search: "", arm: "", outcome: "", groups: {}, sort: null, descending: false };
  const rows = [];

  function haystack(q) {
    const parts = [q.qid, q.doc_id, q.doc_type, q.answer_format, q.gold, q.question, q.evidence_sources.join(" ")];
    for (const arm of Object.values(q.arms)) {
      for (const e of arm.epochs) parts.push(e.raw_answer, e.extracted_answer, e.errors.join(" "));
    }
    return parts.join("\n").toLowerCase();
  }

  function armCells(q, arm) {
    const a = q.arms[arm];
    if (!a) return [el("td", { class: "arm-first" }, pill("missing")), el("td", { class: "num" }), el("td", { class: "num" })];
    const showScore = a.outcome === "partial" || a.outcome === "mixed" || a.epochs.length > 1;
    return [
      el("td", { class: "arm-first" }, pill(a.outcome), showScore ? el("span", { class: "score", text: score(a.score) }) : null),
      el("td", { class: "num", text: count(a.tokens) }),
      el("td", { class: "num", text: secs(a.wall_s) }),
    ];
  }

  function rowElement(q, index) {
    const href = "#q=" + encodeURIComponent(q.qid);
    const evidence = (q.evidence_sources.join(", ") || "–") + (q.evidence_pages.length ? " · p. " + q.evidence_pages.join(", ") : "");
    const tr = el("tr", { "data-index": index },
      el("td", { class: "qcell" },
        el("a", { class: "qid", href: href, text: q.qid }),
        q.disagree ? el("span", { class: "pill flag bad", text: "arms differ" }) : null,
        q.question ? el("div", { class: "qtext", text: q.question.replace(/^Question:\s*/, "") }) : null),
      el("td", { class: "doc", text: q.doc_id }),
      el("td", { text: q.doc_type || "–" }),
      el("td", { text: q.answer_format || "–" }),
      el("td", { text: evidence }),
      ARMS.map((arm) => armCells(q, arm)));
    return tr;
  }

  function matches(row) {
    const q = row.q;
    if (state.search && !row.text.includes(state.search)) return false;
    for (const [dimension, group] of Object.entries(state.groups)) {
      if (group && !(q.groups[dimension] || []).includes(group)) return false;
    }
    const o = state.outcome;
    if (!o) return true;
    if (o === "disagree") return q.disagree;
    if (o.startsWith("versus:")) {
      const [, arm, direction] = o.split(":");
      return q.versus[arm] === direction;
    }
    const arms = state.arm ? [state.arm] : ARMS;
    if (o === "missing") return arms.some((arm) => !q.arms[arm]);
    return arms.some((arm) => q.arms[arm] && q.arms[arm].epochs.some((e) => e.outcome === o));
  }

  const SORT_KEYS = {
    question: (q) => q.qid,
    doc: (q) => q.doc_id,
    type: (q) => q.doc_type,
    format: (q) => q.answer_format,
    evidence: (q) => q.evidence_sources.join(", "),
  };
  function sortKey(name, q) {
    if (SORT_KEYS[name]) return SORT_KEYS[name](q);
    const [arm, field] = name.split("\u0000");
    const a = q.arms[arm];
    return a ? a[field] : null;
  }

  // Rows are drawn a page at a time and built on first display, so a run of thousands of
  // questions opens at once; filters and sorting work on the data, not on the page.
  const PAGE_ROWS = 300;
  let tbody, countLabel, emptyRow, moreButton, headerCells = [];
  let shown = [];  // the rows matching the filters, in display order
  let limit = PAGE_ROWS;
  function ordered() {
    if (!state.sort) return rows;
    const sign = state.descending ? -1 : 1;
    return rows.slice().sort((x, y) => {
      const a = sortKey(state.sort, x.q), b = sortKey(state.sort, y.q);
      if (a === b) return x.index - y.index;
      if (a === null || a === undefined) return 1;
      if (b === null || b === undefined) return -1;
      return (a < b ? -1 : 1) * sign;
    });
  }
  function apply(more) {
    if (!more) {
      shown = ordered().filter(matches);
      limit = PAGE_ROWS;
    }
    const fragment = document.createDocumentFragment();
    for (const row of shown.slice(0, limit)) {
      if (!row.tr) row.tr = rowElement(row.q, row.index);
      fragment.append(row.tr);
    }
    if (!shown.length) fragment.append(emptyRow);
    tbody.replaceChildren(fragment);
    const rest = shown.length - limit;
    moreButton.hidden = rest <= 0;
    moreButton.textContent = "show " + Math.min(rest, PAGE_ROWS) + " more (" + rest + " not shown)";
    countLabel.textContent = shown.length + " of " + rows.length + " questions";
    for (const cell of headerCells) {
      cell.arrow.textContent = state.sort === cell.key ? (state.descending ? " ▼" : " ▲") : "";
    }
  }

  function select(label, options, onchange, id) {
    const node = el("select", { id: id, onchange: (ev) => { onchange(ev.target.value); apply(); } },
      options.map(([value, text]) => el("option", { value: value, text: text })));
    return el("label", {}, label, node);
  }

  function questionTable() {
    rows.length = 0;
    QUESTIONS.forEach((q, i) => rows.push({ q: q, index: i, text: haystack(q), tr: null }));
    const outcomeOptions = [["", "any outcome"]].concat(DATA.outcomes.map((o) => [o, OUTCOME_LABELS[o]]));
    if (QUESTIONS.some((q) => ARMS.some((arm) => !q.arms[arm]))) outcomeOptions.push(["missing", "not run"]);
    if (ARMS.length > 1) {
      outcomeOptions.push(["disagree", "arms score differently"]);
      for (const arm of ARMS) {
        if (arm === DATA.reference_arm) continue;
        outcomeOptions.push(["versus:" + arm + ":better", arm + " better than " + DATA.reference_arm]);
        outcomeOptions.push(["versus:" + arm + ":worse", arm + " worse than " + DATA.reference_arm]);
      }
    }
    const search = el("input", {
      type: "search", id: "filter-search", placeholder: "qid, document, question, answer…",
      oninput: (ev) => { state.search = ev.target.value.trim().toLowerCase(); apply(); },
    });
    const toolbar = el("div", { class: "toolbar" },
      el("label", {}, "search", search),
      select("arm", [["", "any arm"]].concat(ARMS.map((a) => [a, a])), (v) => { state.arm = v; }, "filter-arm"),
      select("outcome (any epoch)", outcomeOptions, (v) => { state.outcome = v; }, "filter-outcome"),
      Object.entries(DATA.filters).filter(([, groups]) => groups.length > 1).map(([dimension, groups]) =>
        select(dimension, [["", "all"]].concat(groups.map((g) => [g, g])), (v) => { state.groups[dimension] = v; },
          "filter-" + dimension.replace(/ /g, "-"))),
      el("button", { type: "button", id: "filter-reset", onclick: reset, text: "reset" }),
      countLabel = el("span", { class: "count", id: "question-count" }));

    function sortable(text, key, cls) {
      const arrow = el("span", { class: "arrow" });
      const th = el("th", {
        class: "sortable " + (cls || ""), title: "sort",
        onclick: () => {
          if (state.sort === key) state.descending = !state.descending;
          else { state.sort = key; state.descending = false; }
          apply();
        },
      }, text, arrow);
      headerCells.push({ key: key, arrow: arrow });
      return th;
    }
    headerCells = [];
    const top = el("tr", {}, el("th", { colspan: 5 }),
      ARMS.map((arm) => el("th", { colspan: 3, class: "arm-group", text: arm })));
    const second = el("tr", {},
      sortable("question", "question"), sortable("document", "doc"), sortable("type", "type"),
      sortable("format", "format"), sortable("evidence", "evidence"),
      ARMS.map((arm) => [
        sortable("outcome", arm + "\u0000score", "arm-first"),
        sortable("tokens", arm + "\u0000tokens", "num"),
        sortable("time", arm + "\u0000wall_s", "num"),
      ]));
    // One listener for every row: a click anywhere on a row opens its question.
    tbody = el("tbody", { onclick: (ev) => {
      const tr = ev.target.closest("tr[data-index]");
      if (tr && !ev.target.closest("a")) location.hash = "#q=" + encodeURIComponent(QUESTIONS[Number(tr.dataset.index)].qid);
    } });
    emptyRow = el("tr", {}, el("td", { colspan: 5 + 3 * ARMS.length, class: "empty", text: "No question matches these filters." }));
    const table = el("table", { class: "questions", id: "questions" }, el("thead", {}, top, second), tbody);
    moreButton = el("button", { type: "button", id: "show-more", class: "show-more",
      onclick: () => { limit += PAGE_ROWS; apply(true); } });
    apply();
    return el("section", { class: "card", id: "question-table" },
      el("h2", { text: "Questions" }), toolbar, el("div", { class: "table-wrap" }, table), moreButton);

    function reset() {
      Object.assign(state, { search: "", arm: "", outcome: "", groups: {}, sort: null, descending: false });
      toolbar.querySelectorAll("select").forEach((s) => { s.value = ""; });
      search.value = "";
      apply();
    }
  }

  // -- transcripts, loaded on demand ----------------------------------------------------------------
  const loaded = new Map();
  const waiting = new Map();
  window.docabTranscriptLoaded = function (number, data) {
    loaded.set(number, data);
    const callbacks = waiting.get(number);
    waiting.delete(number);
    if (callbacks) callbacks.forEach((c) => c.resolve(data));
  };
  function loadTranscript(number) {
    if (loaded.has(number)) return Promise.resolve(loaded.get(number));
    return new Promise((resolve, reject) => {
      if (waiting.has(number)) { waiting.get(number).push({ resolve, reject }); return; }
      waiting.set(number, [{ resolve, reject }]);
      const script = el("script", { src: "transcripts/" + number + ".js" });
      const fail = (message) => {
        const callbacks = waiting.get(number) || [];
        waiting.delete(number);
        script.remove();
        callbacks.forEach((c) => c.reject(new Error(message)));
      };
      script.onerror = () => fail("the transcript file viewer/transcripts/" + number + ".js is missing; run docab view again");
      script.onload = () => { if (!loaded.has(number)) fail("the transcript file is damaged; run docab view again"); };
      document.head.append(script);
    });
  }

  function contentBlocks(blocks) {
    return blocks.map((b) => {
      if (b.type === "text") return textBlock(b.text);
      if (b.type === "image") {
        if (!b.src) return el("div", { class: "placeholder", text: "image not shown (" + b.problem + "): " + b.path });
        return el("figure", {},
          el("a", { href: b.src, target: "_blank", rel: "noopener" }, el("img", { src: b.src, alt: b.path, loading: "lazy" })),
          el("figcaption", { text: b.path + (b.media_type ? " · " + b.media_type : "") }));
      }
      return fold("unrecognised content", textBlock(b.json));
    });
  }

  function eventCard(kind, cls, details, body) {
    return el("div", { class: "event " + cls },
      el("header", {}, el("span", { class: "kind", text: kind }), details.filter(Boolean).map((d) => el("span", { class: "detail" }, d))),
      body && body.length ? el("div", { class: "body" }, body) : null);
  }

  function renderEvent(e) {
    switch (e.type) {
      case "message":
        return eventCard(e.role, e.role, [], contentBlocks(e.content));
      case "model_turn":
        return eventCard("turn " + e.turn, "model_turn", [
          secs(e.latency_s),
          usageText(e.usage),
          "so far " + count(e.tokens_so_far),
          e.stop_reason ? "stop: " + e.stop_reason : "",
          e.retries ? e.retries + " retries" : "",
        ], [
          e.text ? el("div", { class: "said", text: e.text }) : null,
          e.tool_calls.map((c) => el("div", { class: "call" },
            el("span", { class: "name", text: "→ " + c.name }), el("span", { class: "faint small", text: "  " + c.id }),
            c.problem ? el("div", { class: "notice problem", text: "not run: " + c.problem }) : null,
            textBlock(c.arguments, ""))),
          !e.text && !e.tool_calls.length ? el("div", { class: "notice", text: "(no text, no tool call)" }) : null,
          e.raw ? fold("raw provider data", textBlock(e.raw)) : null,
        ]);
      case "tool_result":
        return eventCard("← " + e.name, "tool_result" + (e.is_error ? " is-error" : ""), [
          secs(e.duration_s),
          e.is_error ? el("span", { class: "pill wrong", text: "error" }) : "",
          e.truncated ? el("span", { class: "pill partial", text: "truncated" }) : "",
          e.usage ? "tool-side " + usageText(e.usage) : "",
          el("span", { class: "faint", text: e.tool_call_id }),
        ], [
          contentBlocks(e.content),
          !e.content.length ? el("div", { class: "notice", text: "(empty result)" }) : null,
          e.meta ? fold("_meta", textBlock(e.meta)) : null,
        ]);
      case "model_error":
        return eventCard("model error: " + e.kind, "model_error", [e.retries ? e.retries + " retries" : ""], [textBlock(e.error)]);
      case "answer":
        return eventCard("answer and scoring", "answer", [e.protocol, e.status], [
          el("dl", { class: "meta-grid" },
            el("dt", { text: "answer given" }), el("dd", {}, textBlock(e.raw_answer || "(none)", "")),
            el("dt", { text: "scored answer" }), el("dd", {}, textBlock(e.extracted_answer || "(none)", "")),
            el("dt", { text: "gold" }), el("dd", {}, textBlock(e.gold, "gold")),
            el("dt", { text: "format" }), el("dd", { text: e.answer_format || "–" }),
            el("dt", { text: "score" }), el("dd", { text: score(e.score) }),
            e.errors.length ? [el("dt", { text: "errors" }), el("dd", {}, e.errors.map((x) => textBlock(x, "")))] : null,
            e.extraction_usage.length ? [el("dt", { text: "extraction" }), el("dd", { text: e.extraction_usage.map(usageText).join("; ") })] : null),
          e.extraction ? fold("extraction details", textBlock(e.extraction)) : null,
        ]);
      default:
        return eventCard(e.label || "event", "other", [],
          [e.problem ? el("div", { class: "notice problem", text: e.problem }) : null, textBlock(e.json)]);
    }
  }

  function transcriptView(data) {
    if (data.problem) return el("div", { class: "notice problem", text: data.problem });
    return el("div", { class: "events" },
      (data.notices || []).map((n) => el("div", { class: "notice problem", text: n })),
      el("div", {},
        data.system ? fold("system prompt", textBlock(data.system)) : null,
        data.tools.length ? fold("tools offered (" + data.tools.length + ")", el("dl", { class: "tools-list" },
          data.tools.map((t) => [el("dt", { text: t.name }), el("dd", {}, el("div", { text: t.description }), t.input_schema ? fold("input schema", textBlock(t.input_schema)) : null)]))) : null),
      data.events.map(renderEvent),
      !data.events.length ? el("div", { class: "notice", text: "(the transcript has no events)" }) : null);
  }

  // -- the question view ----------------------------------------------------------------------------
  function stat(label, value) {
    return el("div", {}, el("b", { text: label }), value);
  }

  function armColumn(q, arm, epoch) {
    const a = q.arms[arm];
    const column = el("div", { class: "arm-column", "data-arm": arm });
    const card = el("div", { class: "card" });
    column.append(card);
    if (!a) {
      card.append(el("div", { class: "arm-title" }, el("h3", { text: arm }), pill("missing")),
        el("p", { class: "muted", text: "This arm has no record for this question." }));
      return column;
    }
    const e = a.epochs.find((x) => x.epoch === epoch);
    if (!e) {
      card.append(el("div", { class: "arm-title" }, el("h3", { text: arm }), pill("missing")),
        el("p", { class: "muted", text: "This arm has no record for epoch " + epoch + "." }));
      return column;
    }
    const roles = Object.entries(e.tokens_by_role).map(([r, n]) => r + " " + count(n)).join(", ");
    card.append(
      el("div", { class: "arm-title" }, el("h3", { text: arm }), pill(e.outcome), el("span", { class: "score", text: "score " + score(e.score) }),
        e.limit_hit ? el("span", { class: "pill limit", text: "limit: " + e.limit_hit }) : null),
      el("div", { class: "stats" },
        stat("tokens", count(e.tokens) + (roles ? " (" + roles + ")" : "")),
        stat("Cost (USD)", usd(e.cost_usd) + (e.cost_saved_usd ? " (cache saved " + usd(e.cost_saved_usd) + ")" : "")),
        stat("wall time", secs(e.wall_s)),
        stat("model / tools", secs(e.model_s) + " / " + secs(e.tool_s)),
        stat("turns", count(e.turns)),
        stat("tool calls", count(e.tool_calls) + (e.tool_errors ? ", " + e.tool_errors + " failed" : "") + (e.truncated ? ", " + e.truncated + " truncated" : "")),
        stat("evidence recall", isNum(e.evidence_recall) ? pct(e.evidence_recall) + (e.pages_read.length ? " (read p. " + e.pages_read.join(", ") + ")" : "") + ((e.pages_seen_only || []).length ? " (seen in search results only: p. " + e.pages_seen_only.join(", ") + ")" : "") : "–"),
        e.retries ? stat("retries", count(e.retries)) : null,
        stat("model", e.model)),
      el("div", { class: "result" },
        el("dl", { class: "meta-grid" },
          el("dt", { text: "answer given" }), el("dd", {}, textBlock(e.raw_answer || "(none)", "")),
          el("dt", { text: "scored answer" }), el("dd", {}, textBlock(e.extracted_answer || "(none)", "")),
          el("dt", { text: "protocol" }), el("dd", { text: e.protocol }),
          e.errors.length ? [el("dt", { text: "errors" }), el("dd", {}, e.errors.map((x) => textBlock(x, "")))] : null)));
    const slot = el("div", { class: "transcript" });
    column.append(el("h4", { class: "transcript-title", text: "transcript" }), slot);
    if (e.transcript === null || e.transcript === undefined) {
      slot.append(el("div", { class: "notice problem", text: e.transcript_problem || "transcript missing" }));
    } else {
      slot.append(el("div", { class: "notice", text: "loading the transcript…" }));
      loadTranscript(e.transcript).then(
        (data) => { slot.replaceChildren(transcriptView(data)); },
        (err) => { slot.replaceChildren(el("div", { class: "notice problem", text: err.message })); });
    }
    return column;
  }

  function visibleOrder() {
    return shown.map((row) => row.q.qid);
  }

  function questionView(q, requestedEpoch) {
    const epochs = [...new Set(Object.values(q.arms).flatMap((a) => a.epochs.map((e) => e.epoch)))].sort((a, b) => a - b);
    const epoch = epochs.includes(requestedEpoch) ? requestedEpoch : epochs[0];
    const order = visibleOrder();
    const at = order.indexOf(q.qid);
    const go = (qid) => { location.hash = "#q=" + encodeURIComponent(qid) + (epochs.length > 1 ? "&e=" + epoch : ""); };
    const nav = el("div", { class: "nav" },
      el("a", { href: "#", id: "back", text: "← all questions" }),
      el("button", { type: "button", disabled: at <= 0, onclick: () => go(order[at - 1]), text: "‹ previous" }),
      el("button", { type: "button", disabled: at < 0 || at >= order.length - 1, onclick: () => go(order[at + 1]), text: "next ›" }),
      at >= 0 ? el("span", { class: "position", text: (at + 1) + " of " + order.length + " matching the filters" }) : null);
    const pages = q.evidence_pages.length ? q.evidence_pages.join(", ") : (q.answerable ? "none listed" : "none (unanswerable)");
    const head = el("section", { class: "card" },
      el("h2", {}, el("span", { text: q.qid }), el("span", { class: "muted", text: "  ·  " + q.doc_id })),
      q.question ? el("div", { class: "question-text", text: q.question }) : el("p", { class: "muted", text: "(question text not available: no transcript was readable)" }),
      el("dl", { class: "meta-grid" },
        el("dt", { text: "gold answer" }), el("dd", {}, el("span", { class: "gold", text: q.gold })),
        el("dt", { text: "answer format" }), el("dd", { text: q.answer_format || "–" }),
        el("dt", { text: "evidence" }), el("dd", { text: (q.evidence_sources.join(", ") || "–") + " · pages " + pages }),
        el("dt", { text: "document type" }), el("dd", { text: q.doc_type || "–" })));
    const picker = epochs.length > 1 ? el("div", { class: "epochs" },
      el("span", { class: "muted", text: "epoch" }),
      epochs.map((n) => el("button", { type: "button", "aria-pressed": n === epoch ? "true" : "false",
        onclick: () => { location.hash = "#q=" + encodeURIComponent(q.qid) + "&e=" + n; }, text: String(n) }))) : null;
    const grid = el("div", { class: "arms", id: "arms" }, ARMS.map((arm) => armColumn(q, arm, epoch)));
    grid.style.gridTemplateColumns = "repeat(" + ARMS.length + ", minmax(0, 1fr))";
    return el("div", {}, nav, head, picker, grid);
  }

  // -- routing ---------------------------------------------------------------------------------------
  const overview = el("div", { id: "overview" });
  const detail = el("div", { id: "question", hidden: true });
  let overviewScroll = 0;

  function route() {
    const params = new URLSearchParams(location.hash.replace(/^#/, ""));
    const qid = params.get("q");
    const index = qid === null ? undefined : BY_QID.get(qid);
    if (index === undefined) {
      if (!detail.hidden) {
        detail.hidden = true;
        detail.replaceChildren();
        overview.hidden = false;
        window.scrollTo(0, overviewScroll);
      }
      return;
    }
    if (detail.hidden) overviewScroll = window.scrollY;
    const epoch = params.has("e") ? Number(params.get("e")) : NaN;
    detail.replaceChildren(questionView(QUESTIONS[index], epoch));
    overview.hidden = true;
    detail.hidden = false;
    window.scrollTo(0, 0);
  }

  overview.append(header(), summary(), plots() || "", questionTable());
  app.append(el("div", { class: "page" }, overview, detail));
  window.addEventListener("hashchange", route);
  document.addEventListener("keydown", (ev) => {
    if (ev.key === "Escape" && !detail.hidden) location.hash = "#";
  });
  route();
})();
