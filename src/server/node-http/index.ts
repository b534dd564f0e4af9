/**
 * The service on `node:http`: the server and its requests, the connections it keeps and
 * their limits, answers (early ones linger before the close), the event stream and read
 * your writes. Imports `ops/`, `record/` and `stacks/`. Node-only.
 * @packageDocumentation
 */
export {
  DEFAULT_SERVER_LIMITS,
  type RunningServer,
  type ServerLimits,
  type ServerOptions,
  startServer,
} from './serve.js';
