import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { callSignal } from './callSignal';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

describe('callSignal', () => {
  it('aborts after its time limit, and says so', async () => {
    const call = callSignal(20);
    await new Promise((r) => setTimeout(r, 60));
    expect(call.signal.aborted).toBe(true);
    expect(call.timedOut()).toBe(true);
    call.done();
  });

  it('aborts with the outer signal, which is not a timeout', () => {
    const outer = new AbortController();
    const call = callSignal(60_000, outer.signal);
    outer.abort(new Error('interrupted (SIGINT)'));
    expect(call.signal.aborted).toBe(true);
    expect((call.signal.reason as Error).message).toBe('interrupted (SIGINT)');
    expect(call.timedOut()).toBe(false);
    call.done();
  });

  it('starts aborted when the outer signal already is', () => {
    const outer = new AbortController();
    outer.abort();
    const call = callSignal(60_000, outer.signal);
    expect(call.signal.aborted).toBe(true);
    call.done();
  });

  it('once done, neither the timer nor the outer signal aborts it', async () => {
    const outer = new AbortController();
    const call = callSignal(20, outer.signal);
    call.done();
    await new Promise((r) => setTimeout(r, 60));
    outer.abort();
    expect(call.signal.aborted).toBe(false);
  });

  // What crawl run's status polling needs: the gRPC call leaves its abort listener on the signal,
  // and with AbortSignal.any/timeout on Node 20 that kept every call in memory for good.
  it('is collected after done() although a listener was left on it and the outer signal lives on', async () => {
    const outer = new AbortController();
    const refs: WeakRef<AbortSignal>[] = [];
    for (let i = 0; i < 50; i++) {
      const call = callSignal(60_000, outer.signal);
      const payload = new Array(1000).fill(i);
      call.signal.addEventListener('abort', () => payload.length);
      refs.push(new WeakRef(call.signal));
      call.done();
    }
    // WeakRefs hold their targets until the current job ends; the last signal made can stay
    // referenced from the stack a little longer, so one is allowed.
    await new Promise((r) => setImmediate(r));
    gc();
    await new Promise((r) => setTimeout(r, 10));
    gc();
    expect(refs.filter((r) => r.deref() !== undefined).length).toBeLessThanOrEqual(1);
    expect(outer.signal.aborted).toBe(false);
  });
});
