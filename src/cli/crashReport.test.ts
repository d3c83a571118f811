import { EventEmitter } from 'node:events';
import { Writable } from 'node:stream';
import { createLogger } from '../shared/log';
import { installCrashReport, logProcessWarnings } from './crashReport';

describe('a crash of the crawl process', () => {
  it('is reported as a JSON log line with the stack and one line for the operator, then exits 1', () => {
    const lines: string[] = [];
    const sink = new Writable({ write(chunk, _enc, done) { lines.push(String(chunk)); done(); } });
    const events = new EventEmitter();
    const said: string[] = [];
    const exits: number[] = [];
    installCrashReport(createLogger(sink), events, (t) => said.push(t), (c) => exits.push(c));
    events.emit('unhandledRejection', Object.assign(new Error('disk on fire'), { code: 'EFIRE' }));
    const entry = JSON.parse(lines[0]!) as { level: number; event: string; kind: string; err: { message: string; stack: string }; msg: string };
    expect(entry).toMatchObject({ level: 60, event: 'crash', kind: 'unhandled rejection', err: { message: 'disk on fire' } });
    expect(entry.err.stack).toMatch(/crashReport\.test/);
    expect(said).toEqual(['crawl: internal error (unhandled rejection): disk on fire. This is a bug; nothing already recorded is lost: run the same command again to continue.\n']);
    expect(exits).toEqual([1]);
  });
});

describe("Node's process warnings", () => {
  it('are JSON log lines, not plain text, and the TLS server-name warning for an IP address is left out', () => {
    const lines: string[] = [];
    const sink = new Writable({ write(chunk, _enc, done) { lines.push(String(chunk)); done(); } });
    const events = new EventEmitter();
    const plainText = jest.fn();
    events.on('warning', plainText);
    logProcessWarnings(createLogger(sink), events);
    events.emit('warning', Object.assign(new Error('Setting the TLS ServerName to an IP address is not permitted by RFC 6066.'), { name: 'DeprecationWarning', code: 'DEP0123' }));
    events.emit('warning', Object.assign(new Error('Possible EventEmitter memory leak detected.'), { name: 'MaxListenersExceededWarning' }));
    expect(plainText).not.toHaveBeenCalled();
    expect(lines.map((l) => JSON.parse(l))).toEqual([expect.objectContaining({ level: 40, event: 'node.warning', name: 'MaxListenersExceededWarning', msg: 'Possible EventEmitter memory leak detected.' })]);
  });
});
