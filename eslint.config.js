// ESLint (flat config): the recommended JavaScript and typescript-eslint rules, without type information
// (a whole-tree program would double `npm run lint`'s time; `tsc` already checks types). Formatting is
// Prettier's; import boundaries are dependency-cruiser's (.dependency-cruiser.cjs).
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: ['**/node_modules/**', '**/dist/**', '**/web-dist/**', '**/generated/**', '.tools/**', '.data/**', '.tap/**', 'coverage/**'],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node } },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // `_`-prefixed names are deliberately unused (destructuring a field away, an unused parameter).
      // A tap callback's `t` may go unused.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^(_|t$)', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      eqeqeq: ['error', 'smart'],
      'no-console': 'off',
    },
  },
  {
    // Tests poke at wire payloads and fakes; `any` is tolerated there, not in production code.
    files: ['**/test/**/*.ts', '**/bench/**/*.ts', 'tests/**/*.ts', 'scripts/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // Configuration is parsed once, in config.ts, and handed down from the composition root.
    files: ['packages/*/src/**/*.ts', 'services/*/src/**/*.ts'],
    ignores: ['**/src/**/{config,main,migrate-cli,testing,register,sdk}.ts'],
    rules: {
      'no-restricted-properties': [
        'error',
        { object: 'process', property: 'env', message: 'Read the environment in config.ts (loadConfig) or main.ts only.' },
      ],
    },
  },
  prettier,
);
