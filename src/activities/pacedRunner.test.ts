import { getEventListeners } from 'node:events';
import { maxInAnyWindow } from '../politeness/pacing';
import { runPaced } from './pacedRunner';

function fakeClock(start: number) {
  let t = start;
  return { now: () => t, sleep: async (ms: number) => { t += ms; }, advance: (ms: number) => { t += ms; } };
}

describe('paced runner', () => {
  const schedule = { startMs: 10_000, endMs: 15_000, intervalMs: 1_000, burstSlots: 0 };

  it('sends each item at its slot and never closer than one interval', async () => {
    const clock = fakeClock(9_000);
    const r = await runPaced({ count: 5, schedule, run: async (i) => i, shouldStop: () => false, ...clock });
    expect(r.sentAt).toEqual([10_000, 11_000, 12_000, 13_000, 14_000]);
    expect(r.unused).toEqual([]);
  });

  it('settles items that need no request without a slot, so every slot goes to one that does', async () => {
    const clock = fakeClock(9_000);
    const ruledOut = new Set([1, 2, 4, 7, 9]);
    const sent: number[] = [];
    const r = await runPaced({
      count: 10, schedule: { ...schedule, endMs: 13_000 }, // slots at 10, 11 and 12 s
      run: async (i) => { sent.push(i); return `sent ${i}`; },
      decide: (i) => (ruledOut.has(i) ? `decided ${i}` : undefined),
      shouldStop: () => false, ...clock,
    });
    expect(sent).toEqual([0, 3, 5]);
    expect(r.sentAt).toEqual([10_000, 11_000, 12_000]);
    // Past the last slot, what needs none is settled all the same; the rest goes back.
    expect([...r.results.keys()].sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 7, 9]);
    expect(r.results.get(7)).toBe('decided 7');
    expect(r.unused).toEqual([6, 8]);
    expect(r.decided).toBe(5);
    expect(r.missed).toBe(0);
  });

  it('goes on through slots that pass while its items wait for requests elsewhere to end (their site at its open limit)', async () => {
    // Another grant's two downloads hold the site's limit of two until 12.5 s; this grant has none in flight.
    const clock = fakeClock(9_000);
    const heldUntil = 12_500;
    const r = await runPaced({
      count: 3, schedule, shouldStop: () => false, ...clock,
      choose: () => (clock.now() < heldUntil ? -1 : 0),
      heldOpen: () => clock.now() < heldUntil,
      run: async (i) => i,
    });
    expect(r.sentAt).toEqual([13_000, 14_000]);
    expect(r).toMatchObject({ passed: 3, missed: 0, unused: [2] });
    // Without it the run would have ended at the first slot that passed, its items all handed back.
    const ended = await runPaced({ count: 3, schedule, shouldStop: () => false, ...fakeClock(9_000), choose: () => -1, run: async (i) => i });
    expect(ended).toMatchObject({ passed: 1, unused: [0, 1, 2] });
  });

  it('ends at once when every item is settled without a request', async () => {
    const clock = fakeClock(9_000);
    const r = await runPaced({ count: 4, schedule, run: async () => { throw new Error('nothing may be sent'); }, decide: (i) => i, shouldStop: () => false, ...clock });
    expect(r.sentAt).toEqual([]);
    expect(r.results.size).toBe(4);
    expect(clock.now()).toBe(9_000);
  });

  it('fails with the first run\'s error after the runs in flight end, sends nothing after it, and leaves no rejection unhandled', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => { unhandled.push(reason); };
    process.on('unhandledRejection', onUnhandled);
    try {
      const started: number[] = [];
      let t = 9_000;
      // Real waits between slots, so that the failure lands while the loop waits for the next one.
      const sleep = async (ms: number) => { await new Promise((r) => setTimeout(r, 5)); t += ms; };
      const run = async (i: number) => {
        started.push(i);
        if (i === 1) throw new Error('disk on fire');
        return i;
      };
      await expect(runPaced({ count: 5, schedule, run, shouldStop: () => false, now: () => t, sleep })).rejects.toThrow('disk on fire');
      expect(started).toEqual([0, 1]);
      await new Promise((r) => setTimeout(r, 20)); // Node reports unhandled rejections after a turn
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('started late, moves the rest of the grant later instead of bunching, never past its last slot', async () => {
    const clock = fakeClock(12_500); // the slots at 10 s, 11 s and 12 s have gone by
    const r = await runPaced({ count: 5, schedule, run: async (i) => i, shouldStop: () => false, ...clock });
    expect(r.sentAt).toEqual([12_500, 13_500]); // 14.5 s would be past the last slot (14 s)
    expect([...r.results.keys()]).toEqual([0, 1]);
    expect(r.unused).toEqual([2, 3, 4]);
    expect(r.missed).toBe(3);
  });

  it('with float, a late start slides the grant by up to the float; past it the slots are lost as before', async () => {
    // A slow source's grant: one slot, the next grant a spacing (103 s) after it.
    const slow = { startMs: 10_000, endMs: 113_000, intervalMs: 103_000, burstSlots: 0 };
    const late = async (floatMs?: number) => runPaced({ count: 1, schedule: { ...slow, ...(floatMs !== undefined ? { floatMs } : {}) }, run: async (i) => i, shouldStop: () => false, ...fakeClock(17_000) });
    const without = await late();
    expect(without.sentAt).toEqual([]);
    expect(without.missed).toBe(1);
    expect(without.unused).toEqual([0]);
    const floating = await late(51_500);
    expect(floating.sentAt).toEqual([17_000]);
    expect(floating.lastSendMs).toBe(17_000);
    expect(floating.missed).toBe(0);
    // Later than the float: the timeline after it is the next window's.
    const tooLate = await late(5_000);
    expect(tooLate.sentAt).toEqual([]);
    expect(tooLate.missed).toBe(1);
  });

  it('with float, the whole grant moves together and its last send stays a spacing before the booked end', async () => {
    const floatMs = 4_000;
    const clock = fakeClock(12_500);
    const r = await runPaced({ count: 5, schedule: { ...schedule, floatMs }, run: async (i) => i, shouldStop: () => false, ...clock });
    expect(r.sentAt).toEqual([12_500, 13_500, 14_500, 15_500, 16_500]);
    expect(schedule.endMs + floatMs - r.lastSendMs!).toBeGreaterThanOrEqual(schedule.intervalMs);
    expect(r.missed).toBe(0);
  });

  it('loses only the lateness of a late wake-up, not the slot', async () => {
    let t = 10_000;
    let calls = 0;
    // The first wait overshoots by 30 ms (a busy event loop), the next by 5 ms (within bounds).
    const sleep = async (ms: number) => { calls += 1; t += ms + (calls === 1 ? 30 : calls === 2 ? 5 : 0); };
    const r = await runPaced({ count: 3, schedule, run: async (i) => i, shouldStop: () => false, now: () => t, sleep });
    expect(r.sentAt).toEqual([10_000, 11_030, 12_035]); // slot 2 keeps its spacing from the moved slot 1
    expect(r.unused).toEqual([]);
    expect(r.missed).toBe(0);
  });

  it('keeps every second within the ceiling across back-to-back grants, however late it wakes', async () => {
    for (const rate of [1, 30, 90]) {
      const intervalMs = 1000 / (rate * 0.97); // as the monitor lays slots out
      const sent: number[] = [];
      let t = 0;
      let seed = rate;
      const random = () => { seed = (seed * 16807) % 2147483647; return seed / 2147483647; };
      // A busy event loop: most wake-ups on time, some 10-200 ms late.
      const sleep = async (ms: number) => { t += ms + (random() < 0.2 ? 10 + random() * 190 : random() * 5); };
      let startMs = 10_000;
      for (let g = 0; g < 6; g++) {
        const slots = 15 + g * 7;
        t = Math.max(t, startMs - 50);
        const r = await runPaced({
          count: slots, schedule: { startMs, endMs: startMs + slots * intervalMs, intervalMs, burstSlots: 0 },
          run: async (i) => i, shouldStop: () => false, now: () => t, sleep,
        });
        expect(Math.min(...r.sentAt)).toBeGreaterThanOrEqual(startMs);
        expect(Math.max(...r.sentAt)).toBeLessThanOrEqual(startMs + (slots - 1) * intervalMs + 10);
        sent.push(...r.sentAt);
        startMs += slots * intervalMs; // the next grant owns the stretch right after this one
      }
      // 20 ms to spare for jitter on the way to the site, as the contract's margin promises.
      expect(maxInAnyWindow(sent, 1_020)).toBeLessThanOrEqual(Math.ceil(rate));
      expect(sent.length).toBeGreaterThan(0);
    }
  });

  it('keeps the ceiling when the next grant starts right at the end of a late one', async () => {
    const intervalMs = 1000 / 0.97;
    const sent: number[] = [];
    let t = 9_000;
    let late = true;
    const sleep = async (ms: number) => { t += ms + (late ? 400 : 0); late = false; };
    const first = { startMs: 10_000, endMs: 10_000 + 3 * intervalMs, intervalMs, burstSlots: 0 };
    const r1 = await runPaced({ count: 3, schedule: first, run: async (i) => i, shouldStop: () => false, now: () => t, sleep });
    const second = { startMs: first.endMs, endMs: first.endMs + 3 * intervalMs, intervalMs, burstSlots: 0 };
    const r2 = await runPaced({ count: 3, schedule: second, run: async (i) => i, shouldStop: () => false, now: () => t, sleep });
    sent.push(...r1.sentAt, ...r2.sentAt);
    expect(r1.sentAt).toEqual([10_400, 10_400 + intervalMs]); // the third slot moved past the end
    expect(r1.unused).toEqual([2]);
    expect(maxInAnyWindow(sent, 1_020)).toBe(1);
  });

  it('lets a request that could not leave in time go late while no later slot has sent, moving the rest of the grant', async () => {
    const clock = fakeClock(10_000);
    const leftAt: number[] = [];
    const r = await runPaced({
      count: 3, schedule, shouldStop: () => false, ...clock,
      run: async (i, slotMs, mayGoLate) => {
        if (i === 1) {
          clock.advance(40); // a slow step before the socket: past slotMs + 10 ms
          expect(mayGoLate()).toBe(true);
        }
        leftAt.push(clock.now());
        return i;
      },
    });
    expect(leftAt).toEqual([10_000, 11_040, 12_040]); // slot 2 keeps its spacing from the late one
    expect(r.missed).toBe(0);
    expect(r.unused).toEqual([]);
  });

  it('says which slot its last request went out in, moved as a late send moves it, and none when nothing went out', async () => {
    const clock = fakeClock(9_000);
    // Two items in a five-slot grant: the slots after the second are free once the run returns.
    expect((await runPaced({ count: 2, schedule, run: async (i) => i, shouldStop: () => false, ...clock })).lastSendMs).toBe(11_000);
    const late = fakeClock(10_000);
    const r = await runPaced({
      count: 2, schedule, shouldStop: () => false, ...late,
      run: async (i, _slotMs, mayGoLate) => {
        if (i === 1) { late.advance(40); expect(mayGoLate()).toBe(true); }
        return i;
      },
    });
    expect(r.lastSendMs).toBe(11_040);
    const none = await runPaced({ count: 2, schedule, run: async (i) => i, decide: (i) => i, shouldStop: () => false, ...fakeClock(9_000) });
    expect(none.lastSendMs).toBeUndefined();
  });

  it('refuses to let a request go late once a later slot has sent', async () => {
    const clock = fakeClock(10_000);
    let lateAnswer: boolean | undefined;
    let releaseFirst!: () => void;
    const firstWaits = new Promise<void>((resolve) => { releaseFirst = resolve; });
    const r = await runPaced({
      count: 2, schedule: { ...schedule, burstSlots: 1 }, shouldStop: () => false, ...clock,
      run: async (i, _slotMs, mayGoLate) => {
        if (i === 0 && lateAnswer === undefined) {
          await firstWaits; // still on its way to the socket when the burst slot's request leaves
          clock.advance(30);
          lateAnswer = mayGoLate();
          return 'late';
        }
        releaseFirst();
        return 'sent';
      },
      requeued: (res) => res === 'late',
    });
    expect(lateAnswer).toBe(false);
    expect(r.results.get(1)).toBe('sent');
    expect(r.missed).toBe(1); // item 0 went in a later slot
  });

  it('stops dispatching the moment the source throttles and hands the rest back', async () => {
    const clock = fakeClock(10_000);
    let throttled = false;
    const r = await runPaced({
      count: 5, schedule, shouldStop: () => throttled, ...clock,
      run: async (i) => { if (i === 1) throttled = true; return i; },
    });
    expect([...r.results.keys()]).toEqual([0, 1]);
    expect(r.unused).toEqual([2, 3, 4]);
  });

  it('prepares the item next in line as it starts waiting for its slot, with no wake-up of its own', async () => {
    const prepared: [number, number, number][] = [];
    const sleeps: number[] = [];
    for (const withPrepare of [false, true]) {
      const clock = fakeClock(9_900);
      let n = 0;
      const r = await runPaced({
        count: 3, schedule, run: async (i) => i, shouldStop: () => false, now: clock.now,
        sleep: async (ms) => { n += 1; await clock.sleep(ms); },
        prepare: withPrepare ? (i, slotMs) => { prepared.push([i, slotMs, clock.now()]); } : undefined,
      });
      expect(r.sentAt).toEqual([10_000, 11_000, 12_000]);
      sleeps.push(n);
    }
    expect(prepared).toEqual([[0, 10_000, 9_900], [1, 11_000, 10_000], [2, 12_000, 11_000]]);
    expect(sleeps[1]).toBe(sleeps[0]);
  });

  it('gives an item handed back as "next" the very next slot, without counting a missed slot', async () => {
    const clock = fakeClock(10_000);
    const order: number[] = [];
    let hops = 0;
    const r = await runPaced({
      count: 3, schedule, shouldStop: () => false, ...clock,
      run: async (i) => { order.push(i); return i === 0 && hops++ < 2 ? 'hop' : 'done'; },
      requeued: (res) => (res === 'hop' ? 'next' : false),
    });
    expect(order).toEqual([0, 0, 0, 1, 2]);
    expect(r.sentAt).toEqual([10_000, 11_000, 12_000, 13_000, 14_000]);
    expect(r.missed).toBe(0);
    expect(r.unused).toEqual([]);
  });

  it('prepares an item handed back as "next" only while a slot is left for it', async () => {
    const clock = fakeClock(10_000);
    const prepared: number[] = [];
    let release!: () => void;
    const answered = new Promise<void>((resolve) => { release = resolve; });
    // One slot: the run (robots.txt, say) answers after the loop has ended.
    const runP = runPaced({
      count: 1, schedule: { ...schedule, endMs: 11_000 }, shouldStop: () => false, ...clock,
      run: async () => { await answered; return 'hop'; },
      requeued: (res) => (res === 'hop' ? 'next' : false),
      prepare: (i) => { prepared.push(i); },
    });
    await new Promise((r) => setImmediate(r));
    release();
    const r = await runP;
    expect(prepared).toEqual([0]); // for its own slot, not again for a slot gone by
    expect(r.unused).toEqual([0]);
  });

  it('hands an item put off as "later" back unused, by decide without a slot or by its run, and never tries it again in the grant', async () => {
    const clock = fakeClock(10_000);
    const ran: number[] = [];
    const r = await runPaced({
      count: 5, schedule, shouldStop: () => false, ...clock,
      // 1 and 3 are known to wait (their host's robots.txt); 2 finds out in its slot.
      decide: (i) => (i === 1 || i === 3 ? 'later' : undefined),
      run: async (i) => { ran.push(i); return i === 2 ? 'later' : 'done'; },
      requeued: (res) => (res === 'later' ? 'later' : false),
    });
    expect(ran).toEqual([0, 2, 4]);
    expect(r.sentAt).toEqual([10_000, 11_000, 12_000]);
    expect([...r.results.keys()].sort()).toEqual([0, 4]);
    expect(r.unused.sort()).toEqual([1, 2, 3]);
    expect(r.decided).toBe(2);
    // 2 needs no other slot in this grant: none missed.
    expect(r.missed).toBe(0);
  });

  it('gives each slot to the item chosen for it, lets a slot pass when none may go, and counts neither as missed', async () => {
    const clock = fakeClock(10_000);
    const ran: [number, number][] = [];
    const prepared: [number, number][] = [];
    // Items 0-2 share a host that takes a request every 2.5 s at most; 3 and 4 are elsewhere.
    let hostFreeAt = 0;
    const slow = (i: number) => i <= 2;
    const r = await runPaced({
      count: 5, schedule: { ...schedule, endMs: 17_000 }, shouldStop: () => false, ...clock, // slots at 10..16 s
      choose: (line, slotMs) => line.findIndex((i) => !slow(i) || hostFreeAt <= slotMs),
      prepare: (i, slotMs) => { prepared.push([i, slotMs]); },
      run: async (i, slotMs) => { ran.push([i, slotMs]); if (slow(i)) hostFreeAt = slotMs + 2_500; return i; },
    });
    expect(ran).toEqual([[0, 10_000], [3, 11_000], [4, 12_000], [1, 13_000], [2, 16_000]]);
    // The slots at 14 and 15 s had only item 2 in line, and it had to wait.
    expect(r.passed).toBe(2);
    expect(r.missed).toBe(0);
    expect(r.unused).toEqual([]);
    expect(prepared.map(([i]) => i)).toEqual([0, 3, 4, 1, 2]);
    // What the host never got to is handed back unused.
    hostFreeAt = 0;
    const short = await runPaced({
      count: 3, schedule: { ...schedule, endMs: 13_000 }, shouldStop: () => false, ...fakeClock(10_000),
      choose: (line, slotMs) => line.findIndex(() => hostFreeAt <= slotMs),
      run: async (i, slotMs) => { hostFreeAt = slotMs + 5_000; return i; },
    });
    expect([...short.results.keys()]).toEqual([0]);
    expect(short.unused).toEqual([1, 2]);
    // It ends at the first slot that passes: neither could go by the last slot, nothing was in flight.
    expect(short).toMatchObject({ passed: 1, missed: 0, lastSendMs: 10_000 });
    // Slots a late wake-up pushed past the grant's end are missed only if an item could have gone in them.
    for (const [freeAt, missed] of [[13_000, 0], [0, 2]] as const) {
      const clock = fakeClock(9_000); // wakes for the first slot 1.5 s late: the rest move past the end
      let first = true;
      const late = await runPaced({
        count: 3, schedule: { ...schedule, endMs: 13_000 }, shouldStop: () => false, now: clock.now,
        sleep: async (ms) => { await clock.sleep(ms); if (first) { first = false; clock.advance(1_500); } },
        choose: (line, slotMs) => line.findIndex((i) => i === 0 || freeAt <= slotMs),
        run: async (i) => i,
      });
      expect(late).toMatchObject({ missed, unused: [1, 2] });
    }
  });

  it('skips items an earlier attempt already finished', async () => {
    const clock = fakeClock(10_000);
    const sent: number[] = [];
    const r = await runPaced({ count: 4, schedule, skip: new Set([0, 2]), run: async (i) => { sent.push(i); return i; }, shouldStop: () => false, ...clock });
    expect(sent).toEqual([1, 3]);
    expect(r.sentAt).toEqual([10_000, 11_000]);
  });

  it('lets burst slots go together at the window start', async () => {
    const clock = fakeClock(10_000);
    const r = await runPaced({ count: 4, schedule: { ...schedule, burstSlots: 2 }, run: async (i) => i, shouldStop: () => false, ...clock });
    expect(r.sentAt).toEqual([10_000, 10_000, 10_000, 11_000]);
  });

  it('gives an item handed back by its run a later slot of the same grant', async () => {
    const clock = fakeClock(10_000);
    let first = true;
    const r = await runPaced({
      count: 3, schedule, ...clock, shouldStop: () => false,
      // Item 0's first run spends its slot on something else (robots.txt) and hands it back.
      run: async (i) => {
        if (i === 0 && first) { first = false; return 'requeue'; }
        return 'done';
      },
      requeued: (res) => res === 'requeue',
    });
    expect(r.sentAt).toEqual([10_000, 11_000, 12_000, 13_000]);
    expect([...r.results.keys()].sort()).toEqual([0, 1, 2]);
    expect(r.unused).toEqual([]);
    // The slot that did not serve its item counts as missed: the monitor plans spares by it.
    expect(r.missed).toBe(1);
  });

  it('hands back an item that was handed back after the last slot', async () => {
    const clock = fakeClock(10_000);
    const r = await runPaced({
      count: 5, schedule, ...clock, shouldStop: () => false,
      run: async (i) => (i === 4 ? 'requeue' : 'done'),
      requeued: (res) => res === 'requeue',
    });
    expect(r.sentAt).toHaveLength(5);
    expect(r.unused).toEqual([4]);
    expect(r.results.has(4)).toBe(false);
  });
});

describe('paced runner sleeping on the real clock', () => {
  it('leaves no abort listener behind on the activity signal, however many slots it waited for', async () => {
    const ac = new AbortController();
    const start = Date.now() + 5;
    const r = await runPaced({
      count: 20, schedule: { startMs: start, endMs: start + 40, intervalMs: 2, burstSlots: 0 },
      run: async (i) => i, shouldStop: () => false, signal: ac.signal,
    });
    expect(r.results.size + r.unused.length).toBe(20);
    expect(getEventListeners(ac.signal, 'abort')).toHaveLength(0);
  });

  it('wakes at once when the activity is cancelled mid-wait', async () => {
    const ac = new AbortController();
    const start = Date.now() + 60_000;
    setTimeout(() => ac.abort(), 20);
    const began = Date.now();
    const r = await runPaced({
      count: 3, schedule: { startMs: start, endMs: start + 3_000, intervalMs: 1_000, burstSlots: 0 },
      run: async (i) => i, shouldStop: () => false, signal: ac.signal,
    });
    expect(Date.now() - began).toBeLessThan(5_000);
    expect(r.sentAt).toEqual([]);
  });
});
