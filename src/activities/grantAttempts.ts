/**
 * The attempt of each grant running in this process. When the server gives up on an attempt
 * (its heartbeat came too late) and starts the next one on the same worker while the first is
 * still running, the new attempt stops the old one and takes over everything it finished.
 * Otherwise the old attempt keeps sending in the same slots as the new one, and the new one
 * downloads again what the old one fetched after its last heartbeat. (Across workers, the old
 * attempt learns it was replaced at its next heartbeat.)
 */
export class GrantAttempts<D> {
  private readonly running = new Map<string, { supersede(): void; finished: Promise<D> }>();

  /**
   * Registers a new attempt of `key`. `takeOver` stops the attempt it replaces, if any, and
   * resolves with what that one finished once it has stopped; `release` must be called with
   * what this attempt finished when it ends, however it ends.
   */
  begin(key: string): { superseded(): boolean; takeOver(): Promise<D | undefined>; release(finished: D): void } {
    let superseded = false;
    let finish!: (d: D) => void;
    const me = { supersede: () => { superseded = true; }, finished: new Promise<D>((r) => { finish = r; }) };
    const earlier = this.running.get(key);
    this.running.set(key, me);
    return {
      superseded: () => superseded,
      takeOver: async () => {
        if (!earlier) return undefined;
        earlier.supersede();
        return earlier.finished;
      },
      release: (finished) => {
        finish(finished);
        if (this.running.get(key) === me) this.running.delete(key);
      },
    };
  }
}
