import fsSync from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { makeDirsSync } from '../shared/makeDirs';
import { envText, readFlag } from '../shared/env';
import { isDiskFull } from '../shared/diskRoom';
import { CRAWL_SETTINGS } from '../shared/settingNames';

/** Where thumbnails and metadata records go: a local directory or any S3-compatible store. */
export interface ObjectStore {
  readonly description: string;
  put(key: string, body: Buffer | string, contentType: string): Promise<void>;
  get(key: string): Promise<Buffer | undefined>;
  /**
   * Every key that starts with `prefix` (which may end part-way through a name), in no promised
   * order. One call per thousand keys on S3 instead of one per key: `crawl start` lists a
   * source's done-markers rather than asking for each chunk's.
   */
  list(prefix: string): AsyncIterable<string>;
  /**
   * list() with the time each object was last written (a file's mtime, S3's LastModified: the
   * store's own clock), for an export of what was written since a time (`crawl export --since`).
   */
  listModified?(prefix: string): AsyncIterable<ListedObject>;
  /**
   * Fails with what to do when the store cannot be used (no bucket, no credentials, a directory
   * we cannot write): called before a crawl starts, instead of at every activity's first put.
   */
  verify?(): Promise<void>;
}

export interface ListedObject {
  key: string;
  modifiedMs: number;
}

/**
 * Larger bodies (kept originals, up to CRAWL_MAX_BODY_BYTES) are written from the thread pool:
 * copying 50 MB into the page cache holds the event loop for tens of milliseconds, long enough
 * for other sources' request slots to pass.
 */
const SYNC_WRITE_MAX_BYTES = 1024 * 1024;

function writeAt(fd: number, data: Buffer, off: number): Promise<number> {
  return new Promise((resolve, reject) => fsSync.write(fd, data, off, data.length - off, null, (err, n) => (err ? reject(err) : resolve(n))));
}

/** A write in progress: `${file}.${pid}.${random}.tmp` (see LocalStore.put). */
const IN_PROGRESS = /\.\d+\.[a-z0-9]*\.tmp$/;

function safeKey(key: string): string {
  if (key.startsWith('/') || key.split('/').some((p) => p === '..' || p === '')) throw new Error(`unsafe object key ${JSON.stringify(key)}`);
  return key;
}

export class LocalStore implements ObjectStore {
  /** Directory fsyncs in flight, and the next one that puts arriving meanwhile share. */
  private readonly dirSyncs = new Map<string, { running: Promise<void>; queued?: Promise<void> }>();

  constructor(readonly root: string) {}

  get description(): string {
    return `local directory ${this.root}`;
  }

  async put(key: string, body: Buffer | string, _contentType?: string): Promise<void> {
    const file = path.join(this.root, safeKey(key));
    const dir = path.dirname(file);
    // Write-then-rename: a reader never sees half a file, and a re-run overwrites atomically.
    const tmp = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
    // Only the fsyncs wait on the disk, so only they go to the thread pool. Creating, writing
    // (into the page cache), closing and renaming a thumbnail-sized file take tens of
    // microseconds here; handing each of the four to a pool thread and back cost ~0.37 ms more
    // CPU per object on a busy 2-core worker (bench/RESULTS.md, session 9). The price is that
    // the event loop waits for them: 0.09 ms per object typically, 3.7 ms at the 99.9th percentile
    // on a saturated machine. A store directory on a network file system would wait longer.
    let fd: number;
    let madeDirs: string[] = [];
    try {
      fd = fsSync.openSync(tmp, 'w');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      // Directories are made on first need only.
      madeDirs = newDirectories(dir, makeDirsSync(dir));
      fd = fsSync.openSync(tmp, 'w');
    }
    try {
      const data = typeof body === 'string' ? Buffer.from(body) : body;
      if (data.length <= SYNC_WRITE_MAX_BYTES) {
        for (let off = 0; off < data.length;) off += fsSync.writeSync(fd, data, off, data.length - off);
      } else {
        for (let off = 0; off < data.length;) off += await writeAt(fd, data, off);
      }
      await fsyncFd(fd);
    } catch (err) {
      fsSync.closeSync(fd);
      fsSync.rmSync(tmp, { force: true });
      throw err;
    }
    fsSync.closeSync(fd);
    fsSync.renameSync(tmp, file);
    // The file's fsync makes its bytes durable, not its name: until its directory is synced too,
    // a power cut can take the rename (and a new directory's own entry) back, and a record the
    // crawl had reported as stored would be gone. Those directories are synced before put
    // returns, each fsync shared by the puts that reach the same directory while it runs.
    await Promise.all([dir, ...madeDirs.map((d) => path.dirname(d)).filter((d) => d !== dir)].map((d) => this.syncDir(d)));
  }

  private syncDir(dir: string): Promise<void> {
    const current = this.dirSyncs.get(dir);
    if (!current) return this.startDirSync(dir);
    // The fsync running may have begun before this put's rename, so the put waits for the next
    // one, started when the running one ends and shared by every put that arrives meanwhile.
    current.queued ??= current.running.then(noop, noop).then(() => this.startDirSync(dir));
    return current.queued;
  }

  private startDirSync(dir: string): Promise<void> {
    const entry = { running: fsyncDirectory(dir) };
    this.dirSyncs.set(dir, entry);
    const forget = () => {
      if (this.dirSyncs.get(dir) === entry) this.dirSyncs.delete(dir);
    };
    entry.running.then(forget, forget);
    return entry.running;
  }

  async verify(): Promise<void> {
    try {
      makeDirsSync(this.root);
      await fs.access(this.root, fsSync.constants.W_OK);
      // A full disk or a read-only mount passes the checks above: only writing tells.
      const probe = path.join(this.root, `.write-check.${process.pid}.tmp`);
      await fs.writeFile(probe, 'ok\n');
      await fs.rm(probe, { force: true });
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      throw new Error(`cannot use the ${this.description}: ${e.message} (${isDiskFull(e) ? 'free some space there, or choose another directory' : 'choose a writable directory'}: --out, --data-dir or CRAWL_LOCAL_STORE_DIR)`);
    }
  }

  async *list(prefix: string): AsyncIterable<string> {
    const slash = prefix.lastIndexOf('/');
    const dir = prefix.slice(0, slash + 1);
    if (dir) safeKey(`${dir}x`); // the directory part obeys the rules for keys
    yield* this.walk(dir, prefix.slice(slash + 1));
  }

  async *listModified(prefix: string): AsyncIterable<ListedObject> {
    let keys: string[] = [];
    const stat = async (): Promise<ListedObject[]> => {
      const stats = await Promise.all(keys.map((key) => fs.stat(path.join(this.root, key)).catch((err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOENT') return undefined; // removed since it was listed
        throw err;
      })));
      // Whole milliseconds, as a cursor file writes them back (see exportSince).
      const listed = keys.flatMap((key, i) => (stats[i] ? [{ key, modifiedMs: Math.floor(stats[i].mtimeMs) }] : []));
      keys = [];
      return listed;
    };
    for await (const key of this.list(prefix)) {
      keys.push(key);
      // A few at once: a store of a million records has tens of thousands of record files.
      if (keys.length === STATS_AT_ONCE) yield* await stat();
    }
    yield* await stat();
  }

  /** Streams the directory (fs.opendir): a source's chunk directory can hold millions of files. */
  private async *walk(dir: string, namePrefix: string): AsyncIterable<string> {
    let handle: fsSync.Dir;
    try {
      handle = await fs.opendir(path.join(this.root, dir), { bufferSize: 256 });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ENOTDIR') return;
      throw err;
    }
    for await (const e of handle) {
      if (!e.name.startsWith(namePrefix)) continue;
      if (e.isDirectory()) yield* this.walk(`${dir}${e.name}/`, '');
      else if (!IN_PROGRESS.test(e.name)) yield `${dir}${e.name}`;
    }
  }

  async get(key: string): Promise<Buffer | undefined> {
    try {
      return await fs.readFile(path.join(this.root, safeKey(key)));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
  }
}

const STATS_AT_ONCE = 64;

function noop(): void {}

function fsyncFd(fd: number): Promise<void> {
  return new Promise<void>((resolve, reject) => fsSync.fsync(fd, (err) => (err ? reject(err) : resolve())));
}

async function fsyncDirectory(dir: string): Promise<void> {
  const fd = fsSync.openSync(dir, 'r');
  try {
    await fsyncFd(fd);
  } catch (err) {
    // Some file systems (FUSE, some network mounts) cannot sync a directory: they say so with
    // EINVAL, and there is nothing more that can be done for the name there.
    if ((err as NodeJS.ErrnoException).code !== 'EINVAL') throw err;
  } finally {
    fsSync.closeSync(fd);
  }
}

/** The directories makeDirsSync(dir) made, from `first` (what it returned) down to `dir`. */
function newDirectories(dir: string, first: string | undefined): string[] {
  if (first === undefined) return [];
  const made: string[] = [];
  for (let d = dir; d.length >= first.length; d = path.dirname(d)) {
    made.push(d);
    if (d === first || d === path.dirname(d)) break;
  }
  return made;
}

export interface S3StoreConfig {
  bucket: string;
  prefix?: string;
  endpoint?: string;
  region?: string;
  forcePathStyle?: boolean;
  /** Connecting to the endpoint, ms (default 10 s). */
  connectTimeoutMs?: number;
  /** One request and its response, ms (default 60 s): a thumbnail or a file of records. */
  requestTimeoutMs?: number;
}

/** Credentials come from the standard AWS chain (env, profile, role); they are never logged. */
export class S3Store implements ObjectStore {
  private readonly client: S3Client;

  constructor(private readonly cfg: S3StoreConfig, client?: S3Client) {
    this.client = client ?? new S3Client({
      region: cfg.region ?? 'us-east-1',
      endpoint: cfg.endpoint,
      forcePathStyle: cfg.forcePathStyle ?? false,
      // The SDK waits without limit by default: an endpoint that accepts and never answers held
      // a put, and the fetch activity with it, until the activity's own timeout. With these a
      // stalled store fails like a down one (the source is held and the URLs keep their attempts).
      requestHandler: { connectionTimeout: cfg.connectTimeoutMs ?? 10_000, requestTimeout: cfg.requestTimeoutMs ?? 60_000, throwOnRequestTimeout: true },
    });
  }

  get description(): string {
    return `S3 store s3://${this.cfg.bucket}/${this.cfg.prefix ?? ''}${this.cfg.endpoint ? ` at ${this.cfg.endpoint}` : ''}`;
  }

  private key(key: string): string {
    return `${this.cfg.prefix ?? ''}${safeKey(key)}`;
  }

  /** A one-key listing of our prefix: listing is a permission the crawl needs anyway (done-markers, export). */
  async verify(): Promise<void> {
    try {
      await this.client.send(new ListObjectsV2Command({ Bucket: this.cfg.bucket, Prefix: this.cfg.prefix ?? '', MaxKeys: 1 }));
    } catch (err) {
      throw new Error(`cannot use the ${this.description}: ${s3Advice(err, this.cfg)}`);
    }
  }

  async put(key: string, body: Buffer | string, contentType: string): Promise<void> {
    // Its length given: the SDK measures only bodies that are truthy, and for an empty string
    // (a marker) printed a console line about streams of unknown length, once a marker, to the
    // JSON log's stderr.
    await this.client.send(new PutObjectCommand({ Bucket: this.cfg.bucket, Key: this.key(key), Body: body, ContentLength: Buffer.byteLength(body), ContentType: contentType }));
  }

  async get(key: string): Promise<Buffer | undefined> {
    try {
      const res = await this.client.send(new GetObjectCommand({ Bucket: this.cfg.bucket, Key: this.key(key) }));
      return Buffer.from(await res.Body!.transformToByteArray());
    } catch (err) {
      if ((err as { name?: string }).name === 'NoSuchKey') return undefined;
      throw err;
    }
  }

  async *list(prefix: string): AsyncIterable<string> {
    for await (const o of this.listModified(prefix)) yield o.key;
  }

  async *listModified(prefix: string): AsyncIterable<ListedObject> {
    const base = this.cfg.prefix ?? '';
    let token: string | undefined;
    do {
      const page = await this.client.send(new ListObjectsV2Command({ Bucket: this.cfg.bucket, Prefix: `${base}${prefix}`, ContinuationToken: token }));
      for (const o of page.Contents ?? []) if (o.Key) yield { key: o.Key.slice(base.length), modifiedMs: o.LastModified?.getTime() ?? 0 };
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  destroy(): void {
    this.client.destroy();
  }
}

/** What an S3 failure means for the operator, without anything secret in it. */
function s3Advice(err: unknown, cfg: S3StoreConfig): string {
  const e = err as { name?: string; code?: string; message?: string; $metadata?: { httpStatusCode?: number } };
  const status = e.$metadata?.httpStatusCode;
  if (e.name === 'NoSuchBucket') return `bucket ${JSON.stringify(cfg.bucket)} does not exist (create it, or correct CRAWL_S3_BUCKET)`;
  if (e.name === 'CredentialsProviderError') return 'no AWS credentials found (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE, or run where a role provides them)';
  if (e.name === 'InvalidAccessKeyId' || e.name === 'SignatureDoesNotMatch') return `the AWS credentials were refused (${e.name})`;
  if (e.name === 'AccessDenied' || status === 403) return 'access denied (the crawler needs s3:ListBucket, s3:GetObject and s3:PutObject on the bucket and prefix)';
  // The SDK may wrap the socket error (its code then only in the message).
  const code = e.code ?? (err as { cause?: { code?: string } }).cause?.code ?? /\b(ECONNREFUSED|ENOTFOUND|ETIMEDOUT|ECONNRESET|EHOSTUNREACH|ENETUNREACH|EAI_AGAIN)\b/.exec(e.message ?? '')?.[1];
  if (code && /^E[A-Z_]+$/.test(code)) return `cannot reach ${cfg.endpoint ?? 'the S3 endpoint'} (${code}; check CRAWL_S3_ENDPOINT)`;
  return `${e.name ?? 'error'}: ${e.message ?? String(err)}`.slice(0, 300);
}

export function storeFromEnv(dataDir: string): ObjectStore {
  const kind = envText('CRAWL_STORE', 'local');
  if (kind === 'local') {
    const unchosen = s3SettingsWithoutStore(process.env);
    if (unchosen) throw new Error(unchosen);
    return new LocalStore(envText('CRAWL_LOCAL_STORE_DIR') ?? path.join(dataDir, 'store'));
  }
  if (kind === 's3') return new S3Store(s3ConfigFromEnv());
  throw new Error(`CRAWL_STORE must be "local" or "s3", got ${JSON.stringify(kind)}`);
}

const S3_SETTINGS = CRAWL_SETTINGS.filter((name) => name.startsWith('CRAWL_S3_'));

/**
 * S3 settings given without CRAWL_STORE: the local directory is the default, and a fleet of
 * workers given a bucket but not `CRAWL_STORE=s3` wrote each to its own disk without a word (and
 * `crawl start` its URL lists where no other machine's worker could read them). Which was meant
 * cannot be told, so it is asked. `CRAWL_STORE=local` said outright keeps the local directory.
 */
export function s3SettingsWithoutStore(env: NodeJS.ProcessEnv): string | undefined {
  if (env.CRAWL_STORE?.trim()) return undefined;
  const given = S3_SETTINGS.filter((name) => env[name]?.trim());
  if (!given.length) return undefined;
  return `${given.join(', ')} ${given.length === 1 ? 'is' : 'are'} set, but CRAWL_STORE is not, and without it the store is a local directory: ` +
    'set CRAWL_STORE=s3 to use the S3 store, or CRAWL_STORE=local to keep the local directory';
}

/**
 * The S3 settings, checked here: the SDK would report a bad endpoint or a misspelt flag only at
 * the first request, after a server and a worker had started.
 */
export function s3ConfigFromEnv(env: NodeJS.ProcessEnv = process.env): S3StoreConfig {
  const bucket = env.CRAWL_S3_BUCKET;
  if (!bucket) throw new Error('CRAWL_STORE=s3 needs CRAWL_S3_BUCKET');
  const endpoint = env.CRAWL_S3_ENDPOINT || undefined;
  if (endpoint !== undefined) {
    let u: URL | undefined;
    try {
      u = new URL(endpoint);
    } catch {
      u = undefined;
    }
    if (!u || (u.protocol !== 'http:' && u.protocol !== 'https:')) {
      throw new Error(`CRAWL_S3_ENDPOINT must be an http(s) URL such as http://127.0.0.1:9000, got ${JSON.stringify(endpoint)}`);
    }
    if (u.username || u.password) throw new Error('CRAWL_S3_ENDPOINT must not hold credentials: they come from the AWS credential chain');
  }
  const forcePathStyle = readFlag(env.CRAWL_S3_FORCE_PATH_STYLE, false,
    () => new Error(`CRAWL_S3_FORCE_PATH_STYLE must be true or false, got ${JSON.stringify(env.CRAWL_S3_FORCE_PATH_STYLE)}`));
  // A prefix names a folder: "crawl" and "crawl/" both put every key under crawl/.
  let prefix = env.CRAWL_S3_PREFIX ?? '';
  if (prefix.startsWith('/')) throw new Error(`CRAWL_S3_PREFIX must not start with "/", got ${JSON.stringify(prefix)}`);
  if (prefix !== '' && !prefix.endsWith('/')) prefix += '/';
  return {
    bucket,
    prefix,
    endpoint,
    region: env.CRAWL_S3_REGION || env.AWS_REGION || undefined,
    forcePathStyle,
  };
}
