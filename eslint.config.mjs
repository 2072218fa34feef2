// ESLint: a few rules that catch real bugs; layout is Prettier's job (eslint-config-prettier).
import tseslint from 'typescript-eslint';
import prettier from 'eslint-config-prettier';

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', 'build/', 'cdk8s.out/', '**/*.js', '**/*.mjs'] },
  {
    files: ['**/*.ts'],
    languageOptions: {
      parser: tseslint.parser,
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { '@typescript-eslint': tseslint.plugin },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // A promise nobody awaits loses its error: await it, return it, or mark it `void` on purpose.
      '@typescript-eslint/no-floating-promises': 'error',
      // A promise where a callback's return is ignored (e.g. an async listener) loses its error too.
      '@typescript-eslint/no-misused-promises': [
        'error',
        { checksVoidReturn: { arguments: false, attributes: false } },
      ],
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' },
      ],
    },
  },
  {
    // Product code: long functions are a smell worth seeing, not a failure.
    files: ['api/**/*.ts', 'constructs/**/*.ts', 'runtime/**/*.ts'],
    rules: { 'max-lines-per-function': ['warn', { max: 80, skipBlankLines: true, skipComments: true }] },
  },
  prettier,
);
