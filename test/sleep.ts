/** The tests' one sleep: for pacing loops (probes, polls), never to prove that nothing changed. */
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
