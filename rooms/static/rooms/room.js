// The room's live chat (the stream itself: hub/seqstream.js).
//
// Message frames carry the message as HTML; "message.updated" replaces one in place (a
// steer delivered); "session.changed" tells the task list (agents/_room_tasks.html) to
// reload itself. The composer sends chat or a steer over the same socket; a refused
// message comes back as an error and its text returns to the box. Panels that reload on
// "room-agents-changed" (an assign) wait while a person is typing in them.
(() => {
  "use strict";

  const room = document.getElementById("room");
  if (!room) return;
  const messages = document.getElementById("messages");
  const status = document.getElementById("connection-status");
  const composer = document.getElementById("composer");
  const errorLine = document.getElementById("composer-error");

  let lastSeq = Number(room.dataset.lastSeq || 0);
  const outboxKey = `atrium-outbox:${room.dataset.slug}`;
  let outbox = loadOutbox(); // [{id, frame}], oldest first

  function loadOutbox() {
    try {
      return JSON.parse(window.sessionStorage.getItem(outboxKey) || "[]");
    } catch (error) {
      return [];
    }
  }

  function saveOutbox() {
    try {
      window.sessionStorage.setItem(outboxKey, JSON.stringify(outbox));
    } catch (error) {
      // Storage full or disabled: the outbox still lives in this page.
    }
  }

  function newId() {
    if (window.crypto && window.crypto.randomUUID) return window.crypto.randomUUID();
    return `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
  }

  function showPending(entry) {
    const line = document.createElement("article");
    line.className = "message message--pending";
    line.dataset.clientId = entry.id;
    const head = document.createElement("header");
    head.textContent = "sending…";
    const body = document.createElement("div");
    body.className = "message__text";
    body.textContent = entry.frame.text;
    line.append(head, body);
    messages.appendChild(line);
    messages.scrollTop = messages.scrollHeight;
  }

  function settle(id) {
    outbox = outbox.filter((entry) => entry.id !== id);
    saveOutbox();
    messages.querySelector(`.message--pending[data-client-id="${CSS.escape(id)}"]`)?.remove();
  }

  function flush() {
    for (const entry of outbox) stream.send(entry.frame);
  }

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
    // Stored messages go before the ones still waiting to be sent.
    messages.insertBefore(AtriumStream.fragment(frame.html), messages.querySelector(".message--pending"));
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
    // After a drop, sessions may have changed state while we were away; and what the
    // outbox holds is sent (again: the server stores each id once).
    onSynced(afterDrop) {
      if (afterDrop) room.dispatchEvent(new CustomEvent("session-changed"));
      if (errorLine.textContent.startsWith("Offline")) showError("");
      flush();
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
        case "ack":
          settle(frame.id);
          break;
        case "truncated":
          // Away too long: the server replays only its newest page of messages.
          showError("Some messages from while you were away are not shown here; reload the page to see them.");
          break;
        case "error": {
          showError(frame.message);
          const refused = outbox.find((entry) => entry.id === frame.id);
          if (refused) {
            settle(refused.id);
            // Give back what the server refused, unless the person already typed anew.
            if (composer && !composer.elements.text.value) composer.elements.text.value = refused.frame.text;
          }
          break;
        }
      }
    },
  });

  function send() {
    const text = composer.elements.text.value;
    if (!text.trim()) return;
    const agent = composer.elements.agent.value;
    const id = newId();
    const frame = agent ? { type: "steer", agent: Number(agent), text, id } : { type: "chat", text, id };
    const entry = { id, frame };
    outbox.push(entry);
    saveOutbox();
    showPending(entry);
    composer.elements.text.value = "";
    showError(stream.send(frame) ? "" : "Offline: your message is kept and sent when the connection is back.");
  }

  for (const entry of outbox) showPending(entry); // left from before a reload

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

  // A panel that reloads because the room's agents changed (an assign elsewhere on the
  // page) keeps what a person is typing in it: its own submit brings it back fresh.
  document.addEventListener("htmx:confirm", (event) => {
    const cause = event.detail.triggeringEvent;
    if (cause && cause.type === "room-agents-changed" && typedInto(event.detail.elt)) event.preventDefault();
  });

  function typedInto(panel) {
    return [...panel.querySelectorAll("input, textarea, select")].some((field) => {
      if (field.type === "hidden") return false;
      if (field.type === "checkbox" || field.type === "radio") return field.checked !== field.defaultChecked;
      if (field.tagName === "SELECT") {
        const options = [...field.options];
        // A single choice marked nowhere starts on its first option.
        if (!field.multiple && !options.some((o) => o.defaultSelected)) return field.selectedIndex > 0;
        return options.some((o) => o.selected !== o.defaultSelected);
      }
      return field.value !== field.defaultValue;
    });
  }

  messages.scrollTop = messages.scrollHeight;
})();
