// HTTP plumbing every server shares: the one mapper of the error model (code → status, error.type, the
// ErrorResponse body, the request id), the answer to what Node's parser refuses, and the keep-alive times.
export { httpErrorAnswer, httpStatus, isServerError, newRequestId, pathOf, writeRawError, type HttpErrorAnswer } from './answer.js';
export { PROXY_IDLE_MS, SERVER_KEEP_ALIVE_MS } from './keep-alive.js';
export { answerParserRefusals, type RefusalLog } from './parser-refusals.js';
export { toAppError, type IsStoreOutage, type StoreUnavailableCode } from './to-app-error.js';
