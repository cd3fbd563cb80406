// What bench/control-plane reads in-process (the package's "./bench" export): the configured defaults, whose
// session policy (`sessionPolicyOf`) a create uses, so pgbench runs the very statement the service runs. Keep it that small.
export { loadConfig } from './config.js';
