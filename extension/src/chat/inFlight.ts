// The chat turns in flight, so that the extension can stop them all when it is deactivated (the
// window closing, an update): no new turn starts, the running ones are cancelled, and shutdown
// waits for each to end and save what it had. Pure: no VS Code API, tested with the real engine.

export class InFlight {
  private readonly running = new Set<Promise<unknown>>();
  private closed = false;

  /** Whether shutdown has begun: nothing new may start. */
  get isClosed(): boolean {
    return this.closed;
  }

  /** Tracks `work` until it settles. */
  track<T>(work: Promise<T>): Promise<T> {
    this.running.add(work);
    const done = () => void this.running.delete(work);
    work.then(done, done);
    return work;
  }

  /**
   * Refuses new work, calls `cancel` (which must make the running work end soon, keeping what
   * it has), and waits for the running work to settle, at most `ms` milliseconds. True when all
   * of it ended in time.
   */
  async shutdown(cancel: () => void, ms: number): Promise<boolean> {
    this.closed = true;
    if (this.running.size === 0) return true;
    cancel();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
    const ended = Promise.allSettled([...this.running]).then(() => true as const);
    const inTime = await Promise.race([ended, late]);
    clearTimeout(timer);
    return inTime;
  }
}
