// The session page's live event log (the stream itself: hub/seqstream.js).
//
// Each event frame carries its log line as HTML. Events that change the session's
// status (state, gauge, approvals, tokens) fire "session-refresh" on #session, and the
// status region (agents/_session_status.html) reloads itself through htmx. Once a
// reloaded status says the session ended while a steer form is still shown,
// "session-ended" makes the steer box (agents/_session_steer.html) reload as the ended
// note. Closing the page stops nothing on the server.
(() => {
  "use strict";

  const session = document.getElementById("session");
  if (!session) return;
  const log = document.getElementById("session-events");
  const status = document.getElementById("connection-status");
  let lastSeq = Number(session.dataset.lastSeq || 0);

  // The log scrolls in its own box: it follows the newest rows unless the person
  // scrolled up to read.
  function nearBottom() {
    return log.scrollTop + log.clientHeight >= log.scrollHeight - 80;
  }
  function toBottom() {
    log.scrollTop = log.scrollHeight;
  }
  toBottom();

  // Rows about the hub's own hand-offs (a worker took the turn, queued, running) are
  // folded away unless the person asks for them.
  const plumbing = document.getElementById("show-plumbing");
  function showPlumbing() {
    const stick = nearBottom();
    log.classList.toggle("events--plumbing", plumbing.checked);
    if (stick) toBottom();
  }
  plumbing.addEventListener("change", showPlumbing);
  showPlumbing(); // a box the browser kept checked across a reload

  // A reload of the status asked for while one is under way would be lost: htmx queues
  // it on the region the answer then replaces (outerHTML), and drops a request of an
  // element no longer on the page (as it drops a reload under way when a control's
  // answer replaces the region). That answer was read before the event that asked
  // again (an approval, say), so the region would keep showing the status from before
  // it until the next such event. Each request that answers with the region notes how
  // many reloads were asked when it left; once its answer has settled, the new region
  // asks again if more were asked since.
  let refreshesAsked = 0;
  function refreshStatus() {
    refreshesAsked += 1;
    session.dispatchEvent(new CustomEvent("session-refresh"));
  }
  document.body.addEventListener("htmx:beforeRequest", (event) => {
    if (event.detail.target?.id === "session-status") event.detail.xhr.refreshesAsked = refreshesAsked;
  });
  document.body.addEventListener("htmx:afterSettle", (event) => {
    const asked = event.detail.xhr?.refreshesAsked;
    if (event.target.id === "session-status" && asked !== undefined && refreshesAsked > asked) refreshStatus();
  });

  // "waiting for the model, 42 s" from when the worker sent its request until the
  // next event (the answer, or what came of it) arrives.
  const waiting = document.getElementById("model-waiting");
  function showWaiting() {
    const since = Date.parse(waiting.dataset.since || "");
    waiting.hidden = Number.isNaN(since);
    if (!waiting.hidden) {
      waiting.textContent = `waiting for the model, ${Math.max(0, Math.round((Date.now() - since) / 1000))} s`;
    }
  }
  setInterval(showWaiting, 1000);
  showWaiting();

  function appendEvent(frame) {
    if (frame.seq <= lastSeq) return; // already on the page
    if (Date.parse(frame.at) >= Date.parse(waiting.dataset.since || "")) {
      waiting.dataset.since = "";
      showWaiting();
    }
    const stick = nearBottom();
    document.getElementById("session-events-empty")?.remove();
    log.appendChild(AtriumStream.fragment(frame.html));
    lastSeq = frame.seq;
    session.dataset.lastSeq = String(lastSeq);
    if (frame.refresh) refreshStatus();
    if (stick) toBottom();
  }

  document.body.addEventListener("htmx:afterSettle", (event) => {
    const region = document.getElementById("session-status");
    if (region && region.dataset.ended === "true" && document.querySelector("#session-steer form")) {
      session.dispatchEvent(new CustomEvent("session-ended"));
    }
  });

  // A steer that could not be sent stays in its box; say so instead of failing silently.
  document.body.addEventListener("htmx:sendError", (event) => {
    const box = event.detail.elt.closest("#session-steer, #session-status");
    if (!box) return;
    status.textContent = "the hub did not answer; nothing was lost, try again";
    status.dataset.state = "offline";
  });

  AtriumStream.open({
    path: session.dataset.wsPath,
    lastSeq: () => lastSeq,
    forbidden: "you are not a member of this session's room",
    onStatus(text, state) {
      status.textContent = text;
      status.dataset.state = state;
    },
    // After a drop the status may have moved on without an event we act on.
    onSynced(afterDrop) {
      if (afterDrop) refreshStatus();
    },
    onFrame(frame) {
      if (frame.type === "event") appendEvent(frame);
      else if (frame.type === "waiting") {
        waiting.dataset.since = frame.since;
        showWaiting();
      }
      else if (frame.type === "truncated") {
        // Away too long: the server replays only its newest page of events.
        status.textContent = "some events from while you were away are not shown; reload to see them";
      } else if (frame.type === "error") {
        status.textContent = frame.message;
        status.dataset.state = "offline";
      }
    },
  });
})();
