// The project's test timeout (jest.config.js: Jest ignores `testTimeout` inside a project).
jest.setTimeout((globalThis as { JUNEAU_TEST_TIMEOUT?: number }).JUNEAU_TEST_TIMEOUT ?? 5_000);
