// BackWave dashboard: live refresh over Server-Sent Events, with a pause
// control, and Tag Suggest as the operator types. Every page reads without
// this script; it only swaps the server-rendered live region in place.
(function () {
  "use strict";
  var body = document.body;
  var main = document.getElementById("live");
  var toggle = document.getElementById("live-toggle");
  var status = document.getElementById("live-status");
  var source = null;
  var pending = false;
  var paused = false;
  try { paused = window.sessionStorage.getItem("backwave-live-paused") === "1"; } catch (e) { /* storage off */ }

  function say(text) { status.textContent = text; }

  // dirty reports whether the operator has changed a field of the live
  // region (a filter being typed, a job selected): a swap would lose it.
  function dirty() {
    var fields = main.querySelectorAll("input, select, textarea");
    for (var i = 0; i < fields.length; i++) {
      var el = fields[i];
      if (el === document.activeElement) { return true; }
      if (el.type === "checkbox" || el.type === "radio") {
        if (el.checked !== el.defaultChecked) { return true; }
      } else if (el.tagName === "SELECT") {
        for (var j = 0; j < el.options.length; j++) {
          if (el.options[j].selected !== el.options[j].defaultSelected) { return true; }
        }
      } else if (el.value !== el.defaultValue) {
        return true;
      }
    }
    return false;
  }

  function refresh() {
    // Keep what the operator is doing: swap only an untouched region.
    if (dirty()) {
      pending = true;
      say("Live: update waiting (your changes are kept)");
      return;
    }
    pending = false;
    fetch(window.location.href, { headers: { "X-Backwave-Fragment": "1" }, credentials: "same-origin" })
      .then(function (r) {
        if (!r.ok) { throw new Error("status " + r.status); }
        return r.text();
      })
      .then(function (html) {
        main.innerHTML = html;
        main.setAttribute("data-refreshed", String(Number(main.getAttribute("data-refreshed")) + 1));
        say("Live: updated " + new Date().toLocaleTimeString());
        wireSuggest();
        main.dispatchEvent(new Event("backwave:refreshed"));
      })
      .catch(function (e) { say("Live: refresh failed (" + e.message + ")"); });
  }

  function start() {
    if (source || !window.EventSource) { return; }
    source = new EventSource(body.getAttribute("data-events"));
    source.addEventListener("ready", function () { say("Live: on"); });
    source.addEventListener("refresh", function () { say("Live: on"); refresh(); });
    source.onerror = function () { say("Live: reconnecting…"); };
  }

  function stop() {
    if (source) { source.close(); source = null; }
    say("Live: paused");
  }

  function render() {
    toggle.textContent = paused ? "Resume live refresh" : "Pause live refresh";
    toggle.setAttribute("aria-pressed", paused ? "true" : "false");
  }

  toggle.hidden = false;
  toggle.addEventListener("click", function () {
    paused = !paused;
    try { window.sessionStorage.setItem("backwave-live-paused", paused ? "1" : "0"); } catch (e) { /* storage off */ }
    render();
    // A resumed page catches up at once: what changed while it was
    // paused was never announced to it.
    if (paused) { stop(); } else { start(); refresh(); }
  });
  main.addEventListener("change", function () {
    if (pending && !paused && !dirty()) { refresh(); }
  });
  render();
  if (paused) { say("Live: paused"); } else { say("Live: connecting…"); start(); }

  // Tag Suggest: a prefix completion over every stored Tag, into the
  // field's <datalist>. It never filters the list by itself.
  function wireSuggest() {
    var inputs = document.querySelectorAll("input[data-tag-suggest]");
    Array.prototype.forEach.call(inputs, function (input) {
      if (input.getAttribute("data-wired")) { return; }
      input.setAttribute("data-wired", "1");
      var list = document.getElementById(input.getAttribute("list"));
      var timer = null;
      var asked = "";
      input.addEventListener("input", function () {
        window.clearTimeout(timer);
        timer = window.setTimeout(function () {
          var prefix = input.value;
          if (prefix === asked) { return; }
          asked = prefix;
          fetch(body.getAttribute("data-suggest") + "?prefix=" + encodeURIComponent(prefix), { credentials: "same-origin" })
            .then(function (r) { return r.ok ? r.json() : []; })
            .then(function (tags) {
              if (prefix !== asked) { return; }
              while (list.firstChild) { list.removeChild(list.firstChild); }
              tags.forEach(function (t) {
                var o = document.createElement("option");
                o.value = t.display;
                list.appendChild(o);
              });
              list.setAttribute("data-count", String(tags.length));
            })
            .catch(function () { /* suggestions are a convenience */ });
        }, 150);
      });
    });
  }
  wireSuggest();

  // The Tag Facet of a job list is its own request, so the list never
  // waits for it; without the script it is a link.
  function loadFacets() {
    var sections = document.querySelectorAll("section[data-facet]");
    Array.prototype.forEach.call(sections, function (sec) {
      fetch(sec.getAttribute("data-facet"), { headers: { "X-Backwave-Fragment": "1" }, credentials: "same-origin" })
        .then(function (r) {
          if (!r.ok) { throw new Error("status " + r.status); }
          return r.text();
        })
        .then(function (html) {
          var res = new DOMParser().parseFromString(html, "text/html").getElementById("facet-result");
          if (!res) { return; }
          var back = res.querySelector("p:last-child");
          if (back) { back.parentNode.removeChild(back); }
          var link = sec.querySelector(".facet-link");
          if (link) { link.parentNode.removeChild(link); }
          var old = sec.querySelector("#facet-result");
          if (old) { old.parentNode.removeChild(old); }
          sec.appendChild(document.importNode(res, true));
          sec.setAttribute("data-loaded", "1");
        })
        .catch(function (e) { sec.setAttribute("data-error", e.message); });
    });
  }
  loadFacets();
  main.addEventListener("backwave:refreshed", loadFacets);

  // "Select every job on this page": the header checkbox of the job list
  // sets each row's; a row unticked by hand unticks it. Delegated, so it
  // survives a live refresh.
  document.addEventListener("change", function (e) {
    var el = e.target;
    var boxes = document.querySelectorAll('input[name="id"][form="bulk"]');
    if (el.hasAttribute("data-select-page")) {
      Array.prototype.forEach.call(boxes, function (b) { b.checked = el.checked; });
    } else if (el.name === "id" && el.getAttribute("form") === "bulk") {
      var all = document.querySelector("[data-select-page]");
      if (all) { all.checked = Array.prototype.every.call(boxes, function (b) { return b.checked; }); }
    }
  });
})();
