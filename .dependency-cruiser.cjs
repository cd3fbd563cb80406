// Import boundaries (`npm run lint`): services talk through the contract, never through each other's code;
// packages are libraries of the services; another package is entered only through its `exports`;
// the core domain stays pure. Resolution follows the "@s2s/source" condition, as tsc does.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-service-to-service',
      comment: 'A service never imports another service: they share code through packages/ and talk over the contract.',
      severity: 'error',
      from: { path: '^services/([^/]+)/' },
      to: { path: '^services/', pathNot: '^services/$1/' },
    },
    {
      name: 'no-package-to-service',
      comment: 'Packages are libraries: they never import a service.',
      severity: 'error',
      from: { path: '^(packages|scripts|tests)/' },
      to: { path: '^services/' },
    },
    {
      name: 'only-through-exports',
      comment:
        'Another workspace package is entered only through its package.json exports (src/index.ts, src/testing.ts, ' +
        "src/register.ts, the browser-safe src/money.ts of core, db's src/prisma.ts), never by a path into its src/.",
      severity: 'error',
      from: { path: '^(packages|services|scripts|tests)/([^/]+)/' },
      to: {
        path: '^(packages|scripts)/[^/]+/src/',
        pathNot: ['^$1/$2/', '^(packages|scripts)/[^/]+/src/(index|testing|register|money)\\.ts$', '^packages/db/src/prisma\\.ts$'],
      },
    },
    {
      name: 'no-path-into-another-unit',
      comment: 'Code in another package or service is imported by its package name (@s2s/...), never by a relative path.',
      severity: 'error',
      from: { path: '^(packages|services|scripts|tests)/([^/]+)/' },
      to: { dependencyTypes: ['local'], path: '^(packages|services|scripts)/', pathNot: '^$1/$2/' },
    },
    {
      name: 'bench-through-exports',
      comment:
        'The benchmarks (bench/) enter a package or service only through its package.json exports (a service ' +
        'exposes what a benchmark drives in-process in src/bench-api.ts), never by a path into its src/ or test/.',
      severity: 'error',
      from: { path: '^bench/' },
      to: {
        path: '^(packages|services|scripts|tests)/',
        pathNot: [
          '^(packages|scripts)/[^/]+/src/(index|testing|register|money)\\.ts$',
          '^services/[^/]+/src/bench-api\\.ts$',
          '^packages/handoff/[^/]+\\.(mjs|d\\.mts)$',
        ],
      },
    },
    {
      name: 'pure-core',
      comment: 'packages/core is the pure domain: no database, bus, pg, Prisma or NATS.',
      severity: 'error',
      from: { path: '^packages/core/' },
      to: { path: ['^packages/(db|bus)/', 'node_modules/(pg|pg-pool|@prisma/[^/]+|prisma|nats|@nats-io/[^/]+)/'] },
    },
    {
      name: 'contract-without-prisma',
      comment: 'The contracts package never imports Prisma or the database package.',
      severity: 'error',
      from: { path: '^packages/contract/' },
      to: { path: ['^packages/db/', 'node_modules/(@prisma/[^/]+|prisma)/'] },
    },
    {
      name: 'edge-without-database',
      comment: 'The edge has no database: neither it nor what it loads (http-errors) reaches pg or Prisma.',
      severity: 'error',
      from: { path: ['^services/edge/src/', '^packages/http-errors/src/'] },
      to: { path: ['^packages/db/', 'node_modules/(pg|pg-pool|@prisma/[^/]+|prisma)/'] },
    },
    {
      name: 'prisma-only-where-used',
      comment: 'Prisma Client (@s2s/db/prisma) is loaded only by the processes that use it: not the relay, billing or the edge.',
      severity: 'error',
      from: { path: '^services/(relay|billing|edge)/src/' },
      to: { path: ['^packages/db/src/(prisma\\.ts|generated/)', 'node_modules/@prisma/'] },
    },
    {
      name: 'no-circular',
      comment: 'Workspace packages form a graph without cycles.',
      severity: 'error',
      from: { path: '^(packages|services)/' },
      to: { circular: true, path: '^(packages|services)/', viaOnly: { path: '^(packages|services)/' } },
    },
    {
      name: 'not-to-unresolvable',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: ['/dist/', '/web-dist/', '/generated/', '^\\.tools/', '^\\.data/'] },
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['@s2s/source', 'import', 'require', 'node', 'types', 'default'],
      extensions: ['.ts', '.tsx', '.js', '.mjs', '.cjs', '.json', '.d.ts'],
      mainFields: ['module', 'main', 'types', 'typings'],
    },
    skipAnalysisNotInRules: true,
  },
};
