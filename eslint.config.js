// ESLint: the TypeScript of src/, scripts/, bench/ and test/ with typescript-eslint's
// recommended-type-checked rules (type-aware: they read tsconfig.json through the project
// service), the plain JavaScript (bench/'s peers, test fixtures, spectral/, this file) with
// ESLint's recommended rules. Neither set has formatting rules: Prettier formats.
import js from '@eslint/js'
import { defineConfig } from 'eslint/config'
import tseslint from 'typescript-eslint'

// Node's globals, written out (the `globals` package is not a dependency of ours): the ones the
// JavaScript files may use beside the language's own
const node = Object.fromEntries(
  [
    'AbortController',
    'AbortSignal',
    'Blob',
    'Buffer',
    'URL',
    'URLSearchParams',
    'TextDecoder',
    'TextEncoder',
    'clearImmediate',
    'clearInterval',
    'clearTimeout',
    'console',
    'fetch',
    'global',
    'performance',
    'process',
    'queueMicrotask',
    'setImmediate',
    'setInterval',
    'setTimeout',
    'structuredClone',
  ].map((name) => [name, 'readonly']),
)

// Unused code, wherever it is: variables, imports, parameters (after the last one used: a
// callback's leading ones are its signature) and caught errors; a name starting with _ is unused
// on purpose. A property taken out of an object by destructuring, to keep the rest, is used.
const unusedVars = {
  args: 'after-used',
  argsIgnorePattern: '^_',
  caughtErrors: 'all',
  caughtErrorsIgnorePattern: '^_',
  destructuredArrayIgnorePattern: '^_',
  varsIgnorePattern: '^_',
  ignoreRestSiblings: true,
}

export default defineConfig(
  {
    // written by tools (generated/: npm run generate; the builds; tap), and the SDK programs,
    // which compile against clients generated at test time (tsconfig.json excludes them too)
    ignores: ['generated/', 'dist/', '.build/', 'node_modules/', 'coverage/', '.tap/', '.scratch/', 'data/', 'test/fixtures/sdk/'],
  },
  {
    linterOptions: {
      // an eslint-disable comment whose rule no longer fires is unused code as well
      reportUnusedDisableDirectives: 'error',
    },
  },
  {
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    extends: [js.configs.recommended],
    languageOptions: { ecmaVersion: 'latest', sourceType: 'module', globals: node },
    rules: {
      'no-unused-vars': ['error', unusedVars],
    },
  },
  {
    files: ['**/*.ts'],
    extends: [tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      parserOptions: {
        projectService: true,
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      // A promise must be awaited, returned, or handed on with `void` where it cannot reject.
      // tap's t.test() is the exception: its promise never rejects (a failure is reported by tap
      // as a failed test), and a test file starts its subtests without waiting for them.
      '@typescript-eslint/no-floating-promises': [
        'error',
        { allowForKnownSafePromises: [{ from: 'package', name: 'PromiseWithSubtest', package: '@tapjs/core' }] },
      ],
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-unused-vars': ['error', unusedVars],
      // Off: `async` without `await` is written on purpose here: a Fastify plugin is async (avvio
      // waits for its promise; without one it waits for a `done` callback), and so are the
      // functions that implement a promise-returning type (fakes of a store, tap's subtests).
      // Taking `async` away would turn a rejection into a synchronous throw; the rule has no
      // option to tell these from a forgotten `await` (which no-floating-promises catches).
      '@typescript-eslint/require-await': 'off',
      // `interface Pet extends PetSchema {}`: names a generated type, so that tsc's messages and
      // editors say Pet rather than the generated path
      '@typescript-eslint/no-empty-object-type': ['error', { allowInterfaces: 'with-single-extends' }],
      // a callback's error or a caught value is passed on as it came, as only-throw-error (also
      // in the recommended set) lets `throw` do by default
      '@typescript-eslint/prefer-promise-reject-errors': ['error', { allowThrowingAny: true, allowThrowingUnknown: true }],
      // ESLint's own rules for unused and dead code, which the TypeScript set does not turn on
      'no-unreachable': 'error',
      'no-unused-labels': 'error',
      'no-unused-private-class-members': 'error',
      'no-useless-assignment': 'error',
    },
  },
  {
    // The tests read a response's JSON body as `any` on purpose (test/helpers/app.ts: call()
    // has checked it against the contract already), as they do the rows of a query and the
    // parsed contracts they edit; their assertions check those values at run time. Where the
    // `any` is written, no-explicit-any still asks why.
    files: ['test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
  {
    // The release tooling walks OpenAPI documents as parsed YAML, by key, whatever shape a
    // document (released years ago, or being edited now) has: `Node = Record<string, any>`. What
    // it reads is checked by the breaking-change gate's and the release's own tests.
    files: ['scripts/changelog.ts', 'scripts/check-breaking.ts', 'scripts/release.ts', 'scripts/stability-gate.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
)
