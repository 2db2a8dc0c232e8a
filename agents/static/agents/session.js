// The session page's live event log: one websocket per open session page.
//
// The page renders the log up to data-last-seq. The socket says hello with the last
// seq this page shows; the server replays what came after it, then streams live
// events, each with its log line as HTML. Events that change the session's status
// (state, gauge, approvals, tokens) fire "session-refresh" on #session, and the status
// region (agents/_session_status.html) reloads itself through htmx. On a drop we
// reconnect with backoff and say hello again with the newest seq we hold, so nothing
// is missed and nothing is shown twice. Closing the page stops nothing on the server.
(() => {
  "use strict";

  const CLOSE_FORBIDDEN = 4403;
  const MIN_DELAY_MS = 500;
  const MAX_DELAY_MS = 15000;

  const session = document.getElementById("session");
  if (!session) return;
  const log = document.getElementById("session-events");
  const status = document.getElementById("connection-status");

  let lastSeq = Number(session.dataset.lastSeq || 0);
  let delay = MIN_DELAY_MS;
  let everSynced = false;

  function setStatus(text, state) {
    status.textContent = text;
    status.dataset.state = state;
  }

  function fragment(html) {
    const template = document.createElement("template");
    template.innerHTML = html.trim();
    return template.content.firstElementChild;
  }

  function nearBottom() {
    return window.innerHeight + window.scrollY >= document.body.scrollHeight - 120;
  }

  function refreshStatus() {
    session.dispatchEvent(new CustomEvent("session-refresh"));
  }

  function appendEvent(frame) {
    if (frame.seq <= lastSeq) return; // already on the page
    const stick = nearBottom();
    document.getElementById("session-events-empty")?.remove();
    log.appendChild(fragment(frame.html));
    lastSeq = frame.seq;
    session.dataset.lastSeq = String(lastSeq);
    if (frame.refresh) refreshStatus();
    if (stick) window.scrollTo(0, document.body.scrollHeight);
  }

  function connect() {
    const scheme = window.location.protocol === "https:" ? "wss" : "ws";
    const socket = new WebSocket(`${scheme}://${window.location.host}${session.dataset.wsPath}`);
    setStatus("connecting…", "connecting");

    socket.addEventListener("open", () => {
      socket.send(JSON.stringify({ type: "hello", last_seq: lastSeq }));
    });

    socket.addEventListener("message", (event) => {
      const frame = JSON.parse(event.data);
      switch (frame.type) {
        case "event":
          appendEvent(frame);
          break;
        case "synced":
          delay = MIN_DELAY_MS;
          setStatus("live", "live");
          // After a drop the status may have moved on without an event we act on.
          if (everSynced) refreshStatus();
          everSynced = true;
          break;
        case "error":
          setStatus(frame.message, "offline");
          break;
      }
    });

    socket.addEventListener("close", (event) => {
      if (event.code === CLOSE_FORBIDDEN) {
        setStatus("you are not a member of this session's room", "closed");
        return;
      }
      setStatus(`offline, retrying in ${Math.round(delay / 1000)} s`, "offline");
      // Jitter spreads reconnects when a server restart drops many pages at once.
      window.setTimeout(connect, delay * (0.75 + Math.random() / 2));
      delay = Math.min(delay * 2, MAX_DELAY_MS);
    });
  }

  connect();
})();
