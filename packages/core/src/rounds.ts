/**
 * Background work done in rounds, one at a time: a round now, then every `intervalMs` (the timer never holds the
 * process open) and whenever `poke` is called, none starting while one is under way. A round's failure goes to
 * `onError`; `stop` ends the timer, tells the round under way through its `stopping()` and waits for it.
 */
export function startRounds(
  round: (stopping: () => boolean) => Promise<void>,
  options: { intervalMs: number; onError: (err: unknown) => void },
): { stop(): Promise<void>; poke(): void } {
  let current: Promise<void> | null = null;
  let stopping = false;
  const tick = () => {
    current ??= round(() => stopping)
      .catch(options.onError)
      .finally(() => {
        current = null;
      });
  };
  tick();
  const timer = setInterval(tick, options.intervalMs);
  timer.unref();
  return {
    poke: tick,
    async stop() {
      stopping = true;
      clearInterval(timer);
      await current;
    },
  };
}
