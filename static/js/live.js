/* Live updates for the portal: one websocket to /ws/, plain ES2020, no dependencies.
 * Client sends {type: "subscribe"|"unsubscribe", groups} and {type: "ping"}; the server sends
 * hello, subscribed {groups, denied}, event {group, event, payload}, pong and error; revoked
 * {groups} when the user may no longer follow some (they are dropped), and closes with 4401
 * (sign-in ended) or 4403 (nothing permitted), after which retrying is pointless.
 * Pages declare groups with data-live-groups="a b"; scripts may call PortalLive.subscribe().
 * Every event is re-dispatched on document as "live:event" and "live:<event name>". */
(() => {
  "use strict";

  const BACKOFF_START_MS = 500, BACKOFF_CAP_MS = 10000, PING_EVERY_MS = 20000, TOAST_MS = 6000;
  const SILENCE_LIMIT_MS = 45000;   // no message (not even a pong) this long: the link is dead
  const OFFLINE_AFTER_MS = 60000;   // disconnected this long: say "offline" (still retrying)
  const TERMINAL = new Set(["succeeded", "failed", "cancelled"]);
  const ENDED = new Map([       // close codes after which the server would only refuse us again
    [4401, "Signed out (or the account was deactivated): reload the page to sign in again"],
    [4403, "Your role no longer permits live updates"],
  ]);

  const indicator = document.getElementById("live-indicator");
  const groups = new Set();
  const knownStatus = new Map();    // Action id -> last status seen, to move the dashboard counters
  const knownProgress = new Map();  // Action id -> progress() of the newest event seen
  const toasted = new Set();        // "id:status": the same event may arrive through two groups
  let socket = null, state = "connecting", failures = 0;
  let everConnected = false, resyncPending = false, buffered = null;   // buffered: held during a resync
  let pingTimer = 0, silenceTimer = 0, retryTimer = 0, offlineTimer = 0, countsTimer = 0;
  const emit = (type, detail) => document.dispatchEvent(new CustomEvent(type, { detail }));
  const dispatch = (detail) => { emit("live:event", detail); emit(`live:${detail.event}`, detail); };

  // ---- connection ------------------------------------------------------------------------------
  function setState(next) {
    state = next;
    indicator.dataset.state = next;
    indicator.querySelectorAll(".label").forEach((label) => { label.textContent = next; });
    indicator.title = next === "offline" ? "Disconnected for over a minute; still retrying" : "";
    emit("live:state", { state: next });
  }

  function connect() {
    clearTimeout(retryTimer);
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    let ws;
    try { ws = new WebSocket(`${scheme}//${location.host}/ws/`); } catch (err) { scheduleReconnect(); return; }
    socket = ws;
    heardFromServer();              // a handshake that hangs counts as silence too
    ws.onopen = () => {
      clearTimeout(offlineTimer);
      // "live" once the server confirms the subscription (onMessage), not at the open: an event
      // published between the two would reach nobody while the page already claimed to be live.
      // After a gap we may have missed events: re-fetch the page once the subscription is back.
      // So too on the first connection of a page that shows something about to change (an
      // Action still queued or running, [data-live-resync-when-subscribed]): what changed
      // between the page's rendering and its subscription was published to nobody.
      const changing = document.querySelector("[data-live-resync-when-subscribed]") !== null;
      [resyncPending, everConnected] = [everConnected || changing, true];
      send({ type: "subscribe", groups: [...groups] });
      pingTimer = setInterval(() => send({ type: "ping" }), PING_EVERY_MS);
    };
    ws.onmessage = (msg) => { heardFromServer(); onMessage(msg.data); };
    ws.onclose = (event) => (ENDED.has(event.code) ? endLive(ws, ENDED.get(event.code)) : dropSocket(ws));
  }

  // The server closed for good (portal/realtime/access.py): stop, and say why.
  function endLive(ws, why) {
    if (socket !== ws) return;
    socket = null;
    clearInterval(pingTimer); clearTimeout(silenceTimer); clearTimeout(offlineTimer);
    ws.onopen = ws.onmessage = ws.onclose = null;
    setState("offline");
    indicator.title = why;
  }

  // Forget a socket and retry. Also used for a silent socket, whose close could take minutes.
  function dropSocket(ws) {
    if (socket !== ws) return;
    socket = null;
    clearInterval(pingTimer); clearTimeout(silenceTimer);
    ws.onopen = ws.onmessage = ws.onclose = null;
    if (ws.readyState < WebSocket.CLOSING) ws.close();
    scheduleReconnect();
  }

  function scheduleReconnect() {
    if (state === "live") {
      setState("reconnecting");
      offlineTimer = setTimeout(() => setState("offline"), OFFLINE_AFTER_MS);
    }
    // Exponential backoff with jitter, so a restarted server is not hit by every tab at once.
    const base = Math.min(BACKOFF_CAP_MS, BACKOFF_START_MS * 2 ** failures++);
    retryTimer = setTimeout(connect, base / 2 + Math.random() * (base / 2));
  }

  function heardFromServer() {       // (re)start the silence clock for the current socket
    clearTimeout(silenceTimer);
    silenceTimer = setTimeout(dropSocket, SILENCE_LIMIT_MS, socket);
  }
  const send = (message) => socket && socket.readyState === WebSocket.OPEN && socket.send(JSON.stringify(message));

  function onMessage(text) {
    let msg;
    try { msg = JSON.parse(text); } catch (err) { return; }
    if (msg.type === "hello") failures = 0;   // accepted, not just opened: now reset the backoff
    else if (msg.type === "subscribed") {
      if (state !== "live") setState("live");
      if (msg.denied && msg.denied.length) console.warn("live: not allowed to follow", msg.denied);
      if (resyncPending) { resyncPending = false; resync(); }
    } else if (msg.type === "event" || msg.type === "events") {
      // "events" carries several events that arrived close together, in order.
      (msg.type === "events" ? msg.events : [msg]).forEach((e) => {
        const detail = { group: e.group, event: e.event, payload: e.payload || {} };
        if (buffered) buffered.push(detail); else dispatch(detail);
      });
    } else if (msg.type === "revoked") {
      // Not resubscribed after a reconnect: the server would only deny them.
      msg.groups.forEach((g) => groups.delete(g));
      console.warn("live: no longer allowed to follow", msg.groups);
    } else if (msg.type === "error") console.warn("live: server says", msg.detail);
  }

  // ---- groups and resync -----------------------------------------------------------------------
  const toList = (names) => (Array.isArray(names) ? names : String(names || "").split(/\s+/)).filter(Boolean);
  function subscribe(names) {
    const fresh = toList(names).filter((g) => !groups.has(g));
    fresh.forEach((g) => groups.add(g));
    if (fresh.length) send({ type: "subscribe", groups: fresh });
  }
  function unsubscribe(names) {
    const gone = toList(names).filter((g) => groups.delete(g));
    if (gone.length) send({ type: "unsubscribe", groups: gone });
  }
  const groupsOnPage = () => document.querySelectorAll("[data-live-groups]").forEach((n) => subscribe(n.dataset.liveGroups));
  async function fetchPage() {
    // same-origin credentials: the session cookie goes along; no-store: never a cached copy.
    const res = await fetch(location.href, { credentials: "same-origin", cache: "no-store" });
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    return new DOMParser().parseFromString(await res.text(), "text/html");
  }

  // Replace each [id][data-live-region] with the server's current version of it.
  async function resync() {
    buffered = buffered || [];
    try {
      const doc = await fetchPage();
      const focused = document.activeElement;
      document.querySelectorAll("[id][data-live-region]").forEach((old) => {
        const fresh = doc.getElementById(old.id);
        if (!fresh || !fresh.hasAttribute("data-live-region")) return;
        const copy = document.importNode(fresh, true);
        old.replaceWith(copy);
        if (window.htmx) window.htmx.process(copy);
      });
      // Focus inside a replaced region would fall back to <body>; put it on the new copy.
      const again = focused && focused.id && !document.contains(focused) && document.getElementById(focused.id);
      if (again) again.focus({ preventScroll: true });
      copyCounters(doc);            // the dashboard counters drifted while we were away
    } catch (err) {
      console.warn("live: resync failed", err);
    }
    seedStatuses();
    groupsOnPage();                 // the new regions may ask for groups the old ones did not
    const held = buffered || [];
    buffered = null;
    held.forEach(dispatch);         // events that arrived during the fetch may be newer than it
    emit("live:resync", {});
  }

  // ---- Actions: rows, counters, detail page, toasts ----------------------------------------------
  // Builds DOM from server strings as text nodes and attributes only: never parsed as HTML.
  function el(tag, attrs = {}, children = []) {
    const node = document.createElement(tag);
    Object.entries(attrs).forEach(([k, v]) => node.setAttribute(k, v));
    node.append(...children);
    return node;
  }

  // `shown`: what the page says ("waiting" for a queued Action that re-polls, the event's
  // shown_status); data-status keeps the real status, which the counters and progress use.
  const statusBadge = (status, shown = status) => el("span", { class: `status status-${shown}`, "data-status": String(status) },
    [el("span", { class: "status-icon", "aria-hidden": "true" }), String(shown)]);
  const actionBadge = (a) => statusBadge(a.status, a.shown_status || a.status);
  // "YYYY-MM-DD HH:MM:SS UTC", 24-hour with the zone, as the templates render it (TIME_ZONE).
  const formatTime = (iso) => (iso && !isNaN(new Date(iso)) ? `${new Date(iso).toISOString().slice(0, 19).replace("T", " ")} UTC` : "—");

  // Briefly highlight what an event changed; re-adding the class restarts the animation.
  const flash = (node) => { node.classList.remove("live-updated"); void node.offsetWidth; node.classList.add("live-updated"); };
  function seedStatuses() {
    document.querySelectorAll("[data-action-id]").forEach((node) => {
      const cell = node.querySelector("[data-field=status]");
      if (!cell) return;
      const badge = cell.querySelector("[data-status]");
      const status = badge ? badge.dataset.status : cell.textContent.trim();
      knownStatus.set(String(node.dataset.actionId), status);
      const tries = node.querySelector("[data-field=attempts]");
      const attempts = parseInt(tries ? tries.textContent : "", 10) || 0;
      const shown = badge ? badge.textContent.trim() : status;
      knownProgress.set(String(node.dataset.actionId), progress({ status, attempts, shown_status: shown }));
    });
  }
  // How far an Action has got: each claim adds an attempt (running), a retry puts it back in the
  // queue with that attempt counted, and a terminal status is final. The web process and the
  // worker publish separately, so "queued" may arrive after "succeeded": an event
  // that is behind what the page already shows is stale and changes nothing.
  // A check that must wait (shown_status "waiting") gives its attempt back, so it ranks just
  // after the claim it ended (3 per attempt), not before it: else it read as stale and the page
  // kept saying "running" while the Action waited.
  const progress = (a) => 3 * (Number(a.attempts) || 0) +
    (a.shown_status === "waiting" ? 3 : TERMINAL.has(a.status) ? 2 : a.status === "queued" ? 1 : 0);

  // Same columns as templates/portal/_action_rows.html.
  const actionRow = (a) => el("tr", { id: `action-row-${a.id}`, "data-action-id": String(a.id) }, [
    el("td", { class: "num" }, [el("a", { href: `/actions/${a.id}/` }, [`#${a.id}`])]),
    el("td", {}, [el("code", {}, [String(a.kind)])]),
    el("td", {}, [String(a.target ?? "")]),
    el("td", { "data-field": "status" }, [actionBadge(a)]),
    el("td", { class: "num", "data-field": "attempts" }, [String(a.attempts ?? 0)]),
    el("td", {}, [String(a.requested_by || "system")]),
    el("td", { class: "truncate", title: String(a.reason || "") }, [String(a.reason || "")]),
    el("td", {}, [el("time", { datetime: String(a.created_at || "") }, [formatTime(a.created_at)])]),
  ]);

  // "HH:MM:SS UTC", as the attempts table renders a time (date "H:i:s T").
  const formatClock = (iso) => (iso && !isNaN(new Date(iso)) ? `${new Date(iso).toISOString().slice(11, 19)} UTC` : "—");
  // Same cells as the attempts table of templates/portal/action_detail.html.
  const attemptRow = (t) => el("tr", {}, [
    el("td", { class: "num" }, [String(t.number ?? "")]),
    el("td", {}, [String(t.worker || "")]),
    el("td", {}, [formatClock(t.started_at)]),
    el("td", {}, [formatClock(t.finished_at)]),
    el("td", {}, [statusBadge(t.outcome)]),
    el("td", { class: "truncate" }, [String(t.error || "")]),
  ]);

  // A new Action goes on top only on a first page that is unfiltered or filtered to its status.
  function rowFitsThisPage(a) {
    const params = new URLSearchParams(location.search);
    const status = params.get("status");
    return Number(params.get("page") || 1) <= 1 && (!status || status === a.status);
  }

  function updateRows(a) {
    document.querySelectorAll("tbody[data-live-action-rows]").forEach((tbody) => {
      const row = tbody.querySelector(`#action-row-${CSS.escape(String(a.id))}`);
      if (row) {
        row.querySelectorAll("[data-field=status]").forEach((n) => n.replaceChildren(actionBadge(a)));
        row.querySelectorAll("[data-field=attempts]").forEach((n) => { n.textContent = String(a.attempts ?? ""); });
        flash(row);
      } else if (rowFitsThisPage(a)) {
        tbody.querySelectorAll(".empty-row").forEach((r) => r.remove());
        // Keep the table at the length it loaded with (a full page, or the dashboard's last ten).
        if (!tbody.dataset.liveLimit) tbody.dataset.liveLimit = String(tbody.rows.length >= 10 ? tbody.rows.length : 50);
        tbody.prepend(actionRow(a));
        flash(tbody.rows[0]);
        while (tbody.rows.length > Number(tbody.dataset.liveLimit)) tbody.lastElementChild.remove();
      }
    });
  }

  const counters = (status) => document.querySelectorAll(
    status ? `[data-action-count="${CSS.escape(status)}"]` : "[data-action-count]");
  function bumpCounter(status, delta) {
    counters(status).forEach((node) => {
      node.textContent = String(Math.max(0, (parseInt(node.textContent, 10) || 0) + delta));
      flash(node);
    });
  }
  function copyCounters(doc) {
    counters().forEach((node) => {
      const fresh = doc.querySelector(`[data-action-count="${CSS.escape(node.dataset.actionCount)}"]`);
      if (fresh && fresh.textContent !== node.textContent) { node.textContent = fresh.textContent; flash(node); }
    });
  }

  function updateCounters(a, previous) {
    if (previous === a.status) return;
    if (previous !== undefined) { bumpCounter(previous, -1); bumpCounter(a.status, +1); return; }
    if (a.status === "queued" && !a.attempts) { bumpCounter(a.status, +1); return; }   // brand new
    // An older Action this page never showed: its previous status is unknown, so ask the server.
    if (!counters().length) return;
    clearTimeout(countsTimer);
    countsTimer = setTimeout(() => fetchPage().then(copyCounters).catch((e) => console.warn("live:", e)), 1000);
  }

  function updateDetail(a) {
    if (!document.querySelector(`[data-action-id="${CSS.escape(String(a.id))}"]:not(tr)`)) return;
    // The detail fields sit in the cards below the heading; the action rows have their own.
    const field = (name) => [...document.querySelectorAll(`[data-field=${name}]`)]
      .filter((node) => !node.closest("tr[data-action-id]"));
    field("status").forEach((n) => { n.replaceChildren(actionBadge(a)); flash(n); });
    field("attempts").forEach((n) => {
      const of = /^\s*\d+(\s+of\s+.*)$/.exec(n.textContent);   // keep the " of <max>" suffix
      n.textContent = `${a.attempts ?? ""}${of ? of[1].trimEnd() : ""}`;
    });
    field("finished_at").forEach((n) => { n.textContent = formatTime(a.finished_at); });
    // Only the Action's own group ("action.<id>") carries these; the "actions" event does not.
    if ("started_at" in a) field("started_at").forEach((n) => { n.textContent = formatTime(a.started_at); });
    if (Array.isArray(a.attempt_log)) field("attempt_log").forEach((tbody) => {
      tbody.replaceChildren(...(a.attempt_log.length ? a.attempt_log.map(attemptRow)
        : [el("tr", { class: "empty-row" }, [el("td", { colspan: "6" }, ["Not started yet."])])]));
      flash(tbody);
    });
    field("result").forEach((n) => { n.textContent = JSON.stringify(a.result ?? null, null, 2); });
    const said = a.result && typeof a.result.progress === "string" ? a.result.progress : "";
    field("progress").forEach((n) => { n.textContent = said; });
    field("progress-row").forEach((n) => { n.hidden = !said; });
    field("last_error").forEach((n) => { n.textContent = String(a.last_error || ""); });
    // A finished Action can no longer be cancelled (the server would refuse): drop the form.
    if (TERMINAL.has(a.status)) field("cancel-form").forEach((n) => { n.hidden = true; });
  }

  function toast(a) {
    const box = document.getElementById("toasts");
    const key = `${a.id}:${a.status}`;
    if (!box || toasted.has(key)) return;
    toasted.add(key);
    const kind = a.status === "succeeded" || a.status === "failed" ? a.status : "info";
    const close = el("button", { type: "button", class: "toast-close", "aria-label": "Dismiss" }, ["×"]);
    const node = el("div", { class: `toast toast-${kind}`, role: "status" }, [
      el("span", { class: "toast-body" }, [el("a", { href: `/actions/${a.id}/` }, [`Action #${a.id}`]),
        " ", el("code", {}, [String(a.kind)]), " ", actionBadge(a)]),
      close,
    ]);
    let timer = 0;
    const hold = () => clearTimeout(timer);
    const dismiss = () => { hold(); node.classList.add("leaving"); setTimeout(() => node.remove(), 200); };
    const arm = () => { hold(); timer = setTimeout(dismiss, TOAST_MS); };
    close.addEventListener("click", dismiss);
    // Hovering or focusing a toast keeps it, so nobody loses the link while reaching for it.
    [["mouseenter", hold], ["focusin", hold], ["mouseleave", arm], ["focusout", arm]]
      .forEach(([type, fn]) => node.addEventListener(type, fn));
    box.append(node);
    while (box.children.length > 5) box.firstElementChild.remove();
    arm();
  }

  function onActionUpdated(event) {
    const a = event.detail.payload;
    if (a.id == null || !a.status) return;
    const seen = knownProgress.get(String(a.id));
    if (seen !== undefined && progress(a) < seen) return;   // stale: overtaken by a newer event
    knownProgress.set(String(a.id), progress(a));
    const previous = knownStatus.get(String(a.id));
    knownStatus.set(String(a.id), a.status);
    updateRows(a);
    updateCounters(a, previous);
    updateDetail(a);
    if (TERMINAL.has(a.status) && previous !== a.status) toast(a);
  }

  // ---- public API and start-up -----------------------------------------------------------------
  window.PortalLive = {
    subscribe, unsubscribe,
    /** on("action.updated", (payload, detail) => ...); "*" for every event. Returns off(). */
    on(eventName, fn) {
      const type = eventName === "*" ? "live:event" : `live:${eventName}`;
      const listener = (e) => fn(e.detail.payload, e.detail);
      document.addEventListener(type, listener);
      return () => document.removeEventListener(type, listener);
    },
    get state() { return state; },
  };

  document.addEventListener("live:action.updated", onActionUpdated);
  function start() {
    if (!indicator) return;         // logged-out pages have no indicator and get no socket
    seedStatuses();
    groupsOnPage();
    offlineTimer = setTimeout(() => setState("offline"), OFFLINE_AFTER_MS);
    window.addEventListener("online", () => { if (!socket) { failures = 0; connect(); } });
    connect();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
