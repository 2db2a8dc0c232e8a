// The room's live chat: one websocket per open room page.
//
// The page renders history up to data-last-seq. The socket says hello with the last
// seq this page has shown; the server replays what came after it, then streams live
// messages. On a drop we reconnect with backoff and say hello again with the newest
// seq we hold, so nothing is missed and nothing is shown twice.
(() => {
  "use strict";

  const CLOSE_FORBIDDEN = 4403;
  const MIN_DELAY_MS = 500;
  const MAX_DELAY_MS = 15000;

  const room = document.getElementById("room");
  if (!room) return;
  const messages = document.getElementById("messages");
  const status = document.getElementById("connection-status");
  const composer = document.getElementById("composer");
  const errorLine = document.getElementById("composer-error");

  let lastSeq = Number(room.dataset.lastSeq || 0);
  let socket = null;
  let delay = MIN_DELAY_MS;
  let lastSentText = "";
  let everSynced = false;

  function setStatus(text, state) {
    status.textContent = text;
    status.dataset.state = state;
  }

  function showError(text) {
    errorLine.textContent = text;
    errorLine.hidden = !text;
  }

  function nearBottom() {
    return messages.scrollHeight - messages.scrollTop - messages.clientHeight < 80;
  }

  function fragment(html) {
    const template = document.createElement("template");
    template.innerHTML = html.trim();
    return template.content.firstElementChild;
  }

  function appendMessage(frame) {
    if (frame.seq <= lastSeq) return; // already on the page
    const stick = nearBottom();
    messages.appendChild(fragment(frame.html));
    lastSeq = frame.seq;
    room.dataset.lastSeq = String(lastSeq);
    if (stick) messages.scrollTop = messages.scrollHeight;
  }

  function replaceMessage(frame) {
    const current = document.getElementById(`message-${frame.seq}`);
    if (current) current.replaceWith(fragment(frame.html));
  }

  function connect() {
    const scheme = window.location.protocol === "https:" ? "wss" : "ws";
    socket = new WebSocket(`${scheme}://${window.location.host}${room.dataset.wsPath}`);
    setStatus("connecting…", "connecting");

    socket.addEventListener("open", () => {
      socket.send(JSON.stringify({ type: "hello", last_seq: lastSeq }));
    });

    socket.addEventListener("message", (event) => {
      const frame = JSON.parse(event.data);
      switch (frame.type) {
        case "message":
          appendMessage(frame);
          break;
        case "message.updated":
          replaceMessage(frame);
          break;
        case "synced":
          delay = MIN_DELAY_MS;
          setStatus("live", "live");
          // After a drop, sessions may have changed state while we were away.
          if (everSynced) room.dispatchEvent(new CustomEvent("session-changed"));
          everSynced = true;
          break;
        case "session.changed":
          // The task list (agents/_room_tasks.html) listens for this and reloads itself.
          room.dispatchEvent(new CustomEvent("session-changed", { detail: frame }));
          break;
        case "error":
          showError(frame.message);
          // Give back what the server refused, unless the person already typed anew.
          if (composer && !composer.elements.text.value) composer.elements.text.value = lastSentText;
          break;
      }
    });

    socket.addEventListener("close", (event) => {
      socket = null;
      if (event.code === CLOSE_FORBIDDEN) {
        setStatus("you are not a member of this room", "closed");
        return;
      }
      setStatus(`offline, retrying in ${Math.round(delay / 1000)} s`, "offline");
      // Jitter spreads reconnects when a server restart drops many pages at once.
      window.setTimeout(connect, delay * (0.75 + Math.random() / 2));
      delay = Math.min(delay * 2, MAX_DELAY_MS);
    });
  }

  function send() {
    const text = composer.elements.text.value;
    if (!text.trim()) return;
    if (!socket || socket.readyState !== WebSocket.OPEN) {
      showError("Not connected; your message is still in the box.");
      return;
    }
    const agent = composer.elements.agent.value;
    const frame = agent ? { type: "steer", agent: Number(agent), text } : { type: "chat", text };
    socket.send(JSON.stringify(frame));
    lastSentText = text;
    composer.elements.text.value = "";
    showError("");
  }

  if (composer) {
    composer.addEventListener("submit", (event) => {
      event.preventDefault();
      send();
    });
    composer.elements.text.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        send();
      }
    });
  }

  messages.scrollTop = messages.scrollHeight;
  connect();
})();
