// The room's live chat (the stream itself: hub/seqstream.js).
//
// Message frames carry the message as HTML; "message.updated" replaces one in place (a
// steer delivered); "session.changed" tells the task list (agents/_room_tasks.html) to
// reload itself. The composer sends chat or a steer over the same socket; a refused
// message comes back as an error and its text returns to the box.
(() => {
  "use strict";

  const room = document.getElementById("room");
  if (!room) return;
  const messages = document.getElementById("messages");
  const status = document.getElementById("connection-status");
  const composer = document.getElementById("composer");
  const errorLine = document.getElementById("composer-error");

  let lastSeq = Number(room.dataset.lastSeq || 0);
  let lastSentText = "";

  function showError(text) {
    errorLine.textContent = text;
    errorLine.hidden = !text;
  }

  function nearBottom() {
    return messages.scrollHeight - messages.scrollTop - messages.clientHeight < 80;
  }

  function appendMessage(frame) {
    if (frame.seq <= lastSeq) return; // already on the page
    const stick = nearBottom();
    messages.appendChild(AtriumStream.fragment(frame.html));
    lastSeq = frame.seq;
    room.dataset.lastSeq = String(lastSeq);
    if (stick) messages.scrollTop = messages.scrollHeight;
  }

  function replaceMessage(frame) {
    const current = document.getElementById(`message-${frame.seq}`);
    if (current) current.replaceWith(AtriumStream.fragment(frame.html));
  }

  const stream = AtriumStream.open({
    path: room.dataset.wsPath,
    lastSeq: () => lastSeq,
    forbidden: "you are not a member of this room",
    onStatus(text, state) {
      status.textContent = text;
      status.dataset.state = state;
    },
    // After a drop, sessions may have changed state while we were away.
    onSynced(afterDrop) {
      if (afterDrop) room.dispatchEvent(new CustomEvent("session-changed"));
    },
    onFrame(frame) {
      switch (frame.type) {
        case "message":
          appendMessage(frame);
          break;
        case "message.updated":
          replaceMessage(frame);
          break;
        case "session.changed":
          room.dispatchEvent(new CustomEvent("session-changed", { detail: frame }));
          break;
        case "error":
          showError(frame.message);
          // Give back what the server refused, unless the person already typed anew.
          if (composer && !composer.elements.text.value) composer.elements.text.value = lastSentText;
          break;
      }
    },
  });

  function send() {
    const text = composer.elements.text.value;
    if (!text.trim()) return;
    const agent = composer.elements.agent.value;
    const frame = agent ? { type: "steer", agent: Number(agent), text } : { type: "chat", text };
    if (!stream.send(frame)) {
      showError("Not connected; your message is still in the box.");
      return;
    }
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
})();
