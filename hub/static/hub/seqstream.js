// A live view of an append-only log over a websocket, shared by the room chat and the
// session page.
//
// The page renders the log up to some seq. The socket says hello with the newest seq
// the page holds; the server replays what came after it, says "synced", then streams
// live frames. On a drop it reconnects with backoff (jittered, so a server restart does
// not bring every page back at once) and says hello again with the newest seq, so
// nothing is missed and nothing is shown twice. Close code 4403: not a member, stop.
window.AtriumStream = (() => {
  "use strict";

  const CLOSE_FORBIDDEN = 4403;
  const MIN_DELAY_MS = 500;
  const MAX_DELAY_MS = 15000;

  // options: path, lastSeq() -> newest seq held, onFrame(frame), onSynced(afterDrop),
  // onStatus(text, state), forbidden (text shown on 4403).
  function open(options) {
    let socket = null;
    let delay = MIN_DELAY_MS;
    let everSynced = false;

    function connect() {
      const scheme = window.location.protocol === "https:" ? "wss" : "ws";
      socket = new WebSocket(`${scheme}://${window.location.host}${options.path}`);
      options.onStatus("connecting…", "connecting");
      socket.addEventListener("open", () => {
        socket.send(JSON.stringify({ type: "hello", last_seq: options.lastSeq() }));
      });
      socket.addEventListener("message", (event) => {
        const frame = JSON.parse(event.data);
        if (frame.type === "synced") {
          delay = MIN_DELAY_MS;
          options.onStatus("live", "live");
          options.onSynced(everSynced);
          everSynced = true;
        } else {
          options.onFrame(frame);
        }
      });
      socket.addEventListener("close", (event) => {
        socket = null;
        if (event.code === CLOSE_FORBIDDEN) {
          options.onStatus(options.forbidden, "closed");
          return;
        }
        options.onStatus(`offline, retrying in ${Math.round(delay / 1000)} s`, "offline");
        window.setTimeout(connect, delay * (0.75 + Math.random() / 2));
        delay = Math.min(delay * 2, MAX_DELAY_MS);
      });
    }

    connect();
    return {
      // Sends a frame if connected; false if it could not.
      send(frame) {
        if (!socket || socket.readyState !== WebSocket.OPEN) return false;
        socket.send(JSON.stringify(frame));
        return true;
      },
    };
  }

  function fragment(html) {
    const template = document.createElement("template");
    template.innerHTML = html.trim();
    return template.content.firstElementChild;
  }

  return { open, fragment };
})();
