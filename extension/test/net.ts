// Whether something listens on a port of 127.0.0.1, for the gateway's tests.
import * as net from "node:net";

/** Whether a connection to 127.0.0.1:`port` is accepted. */
export function connects(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}
