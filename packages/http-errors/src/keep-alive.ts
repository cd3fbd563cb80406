// Keep-alive between the edge and the servers behind it: the side that keeps a connection idle for less time
// closes it first, so the edge never reuses a connection the server is closing at that moment.

/** How long our HTTP servers keep an idle keep-alive connection open (Node's default, stated here). */
export const SERVER_KEEP_ALIVE_MS = 5_000;

/** How long the edge keeps an idle connection to a server in its pool: under SERVER_KEEP_ALIVE_MS. */
export const PROXY_IDLE_MS = 4_000;
