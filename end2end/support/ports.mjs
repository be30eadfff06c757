// Loopback ports for the processes the tests and tools start.
import { createServer, connect } from 'node:net';

/** A port free on 127.0.0.1 at this moment. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

/** Whether something accepts connections on 127.0.0.1:`port`. */
export function listening(port) {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => { socket.end(); resolve(true); });
    socket.on('error', () => resolve(false));
  });
}
