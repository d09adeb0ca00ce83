// A small QIX client: JSON-RPC 2.0 over one WebSocket, answers matched to requests by id.

export class QixError extends Error {
  constructor(method, error) {
    super(`${method}: ${error.message || "error"} ${error.parameter || ""} (QIX error ${error.code})`);
    this.code = error.code;
  }
}

export class Qix {
  constructor(url) {
    this.url = url;
    this.nextId = 1;
    this.pending = new Map();
    this.onclose = () => {};
  }

  // Opens the socket; resolves once the engine has said OnConnected.
  open() {
    return new Promise((resolve, reject) => {
      const socket = new WebSocket(this.url);
      this.socket = socket;
      socket.onerror = () => reject(new Error(`cannot connect to ${this.url}`));
      socket.onclose = () => {
        for (const { reject: fail, method } of this.pending.values()) {
          fail(new Error(`${method}: the connection closed`));
        }
        this.pending.clear();
        this.onclose();
      };
      socket.onmessage = (event) => {
        const message = JSON.parse(event.data);
        if (message.method === "OnConnected") {
          resolve(this);
          return;
        }
        const waiting = this.pending.get(message.id);
        if (!waiting) return;
        this.pending.delete(message.id);
        if (message.error) waiting.reject(new QixError(waiting.method, message.error));
        else waiting.resolve(message.result);
      };
    });
  }

  // The result of `method` on object `handle`.
  call(handle, method, ...params) {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, method });
      this.socket.send(JSON.stringify({ jsonrpc: "2.0", id, handle, method, params }));
    });
  }

  close() {
    this.onclose = () => {};
    if (this.socket) this.socket.close();
  }
}

// The QIX URL of an app on the server that served this page.
export function qixUrl(appId) {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  return `${scheme}://${location.host}/app/${encodeURIComponent(appId)}`;
}
