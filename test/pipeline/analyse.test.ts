import { analyse, ContentError, HEVC_NOT_DECODED, JPEG_CUT_SHORT, sniffImageType, thumbnail } from '../../src/pipeline/analyse';
import { jpegComplete } from '../../src/pipeline/jpegStructure';
import { estimateJpegQuality } from '../../src/pipeline/jpegQuality';
import sharp from 'sharp';
import { bombPng, exifBombJpeg, gradient, hevcHeic, iptcJpeg, jpeg, png, rotatedJpeg, scanBombJpeg, xmpJpeg } from '../support/images';

describe('image analysis (real sharp)', () => {
  it.each([50, 75, 90])('estimates JPEG quality %p within +-5', async (q) => {
    const est = estimateJpegQuality(await jpeg(320, 240, q));
    expect(est).toBeDefined();
    expect(Math.abs(est! - q)).toBeLessThanOrEqual(5);
  });

  it('estimates every quality libjpeg encodes exactly, the lowest too (entries clipped at 255 there)', async () => {
    const wrong: string[] = [];
    for (let q = 1; q <= 100; q++) {
      const est = estimateJpegQuality(await jpeg(64, 48, q));
      if (est !== q) wrong.push(`${q} read as ${est}`);
    }
    expect(wrong).toEqual([]);
  });

  it('reports display width and height after EXIF orientation, and licensing EXIF', async () => {
    const a = await analyse(await rotatedJpeg(), 50_000_000);
    expect({ w: a.width, h: a.height, o: a.orientation }).toEqual({ w: 200, h: 400, o: 6 });
    expect(a.artist).toBe('Ada Lovelace');
    expect(a.copyright).toBe('CC BY 4.0');
    expect(a.format).toBe('jpeg');
  });

  it('takes creator, copyright and the license link from XMP when EXIF has none (EXIF first when both do)', async () => {
    const fromXmp = await analyse(await xmpJpeg(), 50_000_000);
    expect({ artist: fromXmp.artist, copyright: fromXmp.copyright, licenseUrl: fromXmp.licenseUrl })
      .toEqual({ artist: 'Grace Hopper', copyright: '© 2026 Grace Hopper, CC BY-SA 4.0', licenseUrl: 'https://photos.example/license' });
    const both = await analyse(await xmpJpeg({ Artist: 'G. Hopper' }), 50_000_000);
    expect({ artist: both.artist, copyright: both.copyright, licenseUrl: both.licenseUrl })
      .toEqual({ artist: 'G. Hopper', copyright: '© 2026 Grace Hopper, CC BY-SA 4.0', licenseUrl: 'https://photos.example/license' });
    expect((await analyse(await jpeg(64, 48), 50_000_000)).licenseUrl).toBeNull();
  });

  it('analyses an image with a crafted EXIF block in bounded time (thousands of entries claiming huge values)', async () => {
    const body = await exifBombJpeg();
    const started = Date.now();
    const a = await analyse(body, 50_000_000);
    expect(Date.now() - started).toBeLessThan(1_000);
    expect({ format: a.format, width: a.width, height: a.height }).toEqual({ format: 'jpeg', width: 64, height: 48 });
  });

  it('takes creator and copyright from a legacy IPTC-IIM block when there is no EXIF or XMP', async () => {
    const a = await analyse(await iptcJpeg(), 50_000_000);
    expect({ artist: a.artist, copyright: a.copyright, licenseUrl: a.licenseUrl })
      .toEqual({ artist: 'Dorothea Lange', copyright: 'Library of Congress, no known restrictions', licenseUrl: null });
  });

  it('decides the type from the bytes and hashes them', async () => {
    const body = await png(64, 48);
    const a = await analyse(body, 50_000_000);
    expect(a).toMatchObject({ format: 'png', width: 64, height: 48, bytes: body.length, jpegQuality: null });
    expect(a.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(sniffImageType(Buffer.from('<!doctype html><html>'))).toBeUndefined();
  });

  it.each([
    ['', 'empty body', true],
    ['<!DOCTYPE html>\n<html><body>Not found</body></html>', 'an HTML page', true],
    ['\n  <html lang="en">', 'an HTML page', true],
    ['<?xml version="1.0"?>\n<!-- logo -->\n<svg xmlns="http://www.w3.org/2000/svg"/>', 'an SVG (vector) image, which is not analysed', false],
    ['\uFEFF<svg width="10">', 'an SVG (vector) image, which is not analysed', false],
    ['{"error":"x"}', 'JSON starting "{\\"error\\":\\"x\\"}"', true],
    ['Access Denied\r\n\r\nYou don\'t have permission to access this resource on this server.', 'text starting "Access Denied You don\'t have permission ..."', true],
    ['%PDF-1.7\n%\xe2\xe3', 'a PDF document', false],
    [Buffer.from([0xff, 0x0a, 0xfa, 0x7f]), 'a JPEG XL image, which is not analysed', false],
    [Buffer.concat([Buffer.from('BM'), Buffer.alloc(12), Buffer.from([40, 0, 0, 0])]), 'a BMP image, which is not analysed', false],
    ['BMW 3 series', 'text starting "BMW 3 series"', true],
    [Buffer.from([0, 0, 1, 0, 1, 0, 16, 16]), 'an ICO icon, which is not analysed', false],
    [Buffer.from([0x1f, 0x8b, 8, 0]), 'gzip-compressed data', false],
    [Buffer.from([0x00, 0x01, 0x02, 0x03, 0xfe, 0xfd, 0xfc, 0xfb, 0x10]), 'unrecognised leading bytes (00 01 02 03 fe fd fc fb)', false],
  ])('names what a non-image body is in its reason, and whether it is a page (HTML, JSON, text): %j', async (body, reason, page) => {
    const err = await analyse(Buffer.from(body), 50_000_000).then(() => undefined, (e: unknown) => e);
    expect(err).toEqual(new ContentError(`not an image: ${reason}`));
    expect((err as ContentError).page).toBe(page);
  });

  it('refuses a 30000x30000 PNG header cheaply, before decoding', async () => {
    const started = Date.now();
    await expect(analyse(bombPng(), 100_000_000)).rejects.toThrow(ContentError);
    await expect(analyse(bombPng(), 100_000_000)).rejects.toThrow(/pixel limit|exceeds/);
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it('refuses a progressive JPEG whose scans would take the decoder seconds (a scan bomb), before decoding, and analyses a usual one', async () => {
    const started = Date.now();
    // Decoded, this 350 KB file took 24 s of CPU in sharp (a timeout does not stop it).
    await expect(analyse(scanBombJpeg(9984), 100_000_000)).rejects.toThrow(new ContentError('JPEG of 9984x9984 pixels in 883 scans: decoding it would take '
      + '1,375,276,032 passes over 8x8 blocks (at most 200,000,000), the pattern of a progressive-JPEG decompression bomb; not decoded'));
    expect(Date.now() - started).toBeLessThan(1_000);
    const usual = await sharp(await gradient(1600, 1200)).jpeg({ progressive: true }).toBuffer();
    expect(await analyse(usual, 100_000_000)).toMatchObject({ format: 'jpeg', width: 1600, height: 1200 });
  });

  it('calls a truncated JPEG a content error when its pixels are decoded', async () => {
    const whole = await jpeg(200, 200);
    await expect(thumbnail(whole.subarray(0, Math.floor(whole.length / 3)), { maxPixels: 50_000_000, maxSide: 640, quality: 80 })).rejects.toThrow(ContentError);
  });

  it('says a JPEG is cut short in the same words for every file, however many fail at once', async () => {
    // libvips' one error buffer for all threads: 50 such files at once came back with "Unknown
    // error" for ~20 of them and the message twice or more for as many.
    const cut = await Promise.all(Array.from({ length: 24 }, async (_, i) => {
      const whole = await jpeg(300 + i, 200);
      return whole.subarray(0, Math.floor(whole.length / 2));
    }));
    const reasons = await Promise.all([...cut, ...cut].map((file) => thumbnail(file, { maxPixels: 50_000_000, maxSide: 640, quality: 80 }).then(() => 'decoded', (e: Error) => e.message)));
    expect(new Set(reasons)).toEqual(new Set([JPEG_CUT_SHORT]));
    // A whole file with trailing bytes after its end marker is not cut short.
    const whole = await jpeg(200, 200);
    expect(jpegComplete(whole)).toBe(true);
    expect(jpegComplete(Buffer.concat([whole, Buffer.from('trailing data')]))).toBe(true);
    expect(jpegComplete(whole.subarray(0, whole.length - 2))).toBe(false);
  });

  it('makes thumbnails with the longest side 640, never enlarged, orientation applied', async () => {
    const sharp = (await import('sharp')).default;
    const big = await sharp(await thumbnail(await jpeg(1600, 900), { maxPixels: 50_000_000, maxSide: 640, quality: 80 })).metadata();
    expect([big.width, big.height, big.format]).toEqual([640, 360, 'jpeg']);
    const small = await sharp(await thumbnail(await png(100, 50), { maxPixels: 50_000_000, maxSide: 640, quality: 80 })).metadata();
    expect([small.width, small.height]).toEqual([100, 50]);
    const turned = await sharp(await thumbnail(await rotatedJpeg(), { maxPixels: 50_000_000, maxSide: 640, quality: 80 })).metadata();
    expect([turned.width, turned.height]).toEqual([200, 400]);
  });

  it('makes WebP thumbnails when asked, of the size asked, with transparency kept (a JPEG\'s is white)', async () => {
    const sharp = (await import('sharp')).default;
    const clear = await sharp({ create: { width: 800, height: 400, channels: 4, background: { r: 200, g: 0, b: 0, alpha: 0 } } }).png().toBuffer();
    const webp = await thumbnail(clear, { maxPixels: 50_000_000, maxSide: 256, quality: 80, format: 'webp' });
    const meta = await sharp(webp).metadata();
    expect([meta.format, meta.width, meta.height, meta.hasAlpha]).toEqual(['webp', 256, 128, true]);
    const { data } = await sharp(webp).raw().toBuffer({ resolveWithObject: true });
    expect(data[3]).toBe(0);
    const jpegThumb = await sharp(await thumbnail(clear, { maxPixels: 50_000_000, maxSide: 256, quality: 80 })).raw().toBuffer({ resolveWithObject: true });
    expect([jpegThumb.info.channels, jpegThumb.data[0], jpegThumb.data[1]]).toEqual([3, 255, 255]);
  });

  it('says that a HEIC photo cannot be decoded by this build, the same words for every file, once its size is read', async () => {
    const reasons = new Set<string>();
    for (const [w, h] of [[640, 480], [4032, 3024]] as const) {
      const file = hevcHeic(w, h);
      const a = await analyse(file, 50_000_000);
      expect([a.format, a.width, a.height]).toEqual(['heif', w, h]);
      const err = await thumbnail(file, { maxPixels: 50_000_000, maxSide: 640, quality: 80 }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ContentError);
      reasons.add((err as Error).message);
    }
    // libheif's own words named a different offset in each file ("source: bad seek to 7112").
    expect([...reasons]).toEqual([HEVC_NOT_DECODED]);
  });

  // One sRGB red, stored in each file's own colour space: a thumbnail shows it as the same sRGB red.
  it.each<[string, (s: sharp.Sharp) => sharp.Sharp]>([
    ['a 16-bit PNG with an sRGB profile (as Photoshop saves one)', (s) => s.toColourspace('rgb16').withIccProfile('srgb').png()],
    ['a 16-bit PNG with alpha and a Display P3 profile', (s) => s.ensureAlpha().toColourspace('rgb16').withIccProfile('p3').png()],
    ['an 8-bit PNG with a Display P3 profile', (s) => s.withIccProfile('p3').png()],
    ['an 8-bit JPEG with a Display P3 profile', (s) => s.withIccProfile('p3').jpeg({ quality: 100 })],
    ['a 16-bit PNG without a profile (read as sRGB)', (s) => s.toColourspace('rgb16').png()],
  ])('makes an sRGB thumbnail from %s', async (_, encode) => {
    const red = Buffer.alloc(32 * 32 * 3);
    for (let i = 0; i < red.length; i += 3) red.set([200, 60, 40], i);
    const file = await encode(sharp(red, { raw: { width: 32, height: 32, channels: 3 } })).toBuffer();
    const thumb = await thumbnail(file, { maxPixels: 50_000_000, maxSide: 640, quality: 95 });
    expect((await sharp(thumb).metadata()).hasProfile).toBe(false);
    const [r, g, b] = await sharp(thumb).raw().toBuffer();
    // Its P3 numbers read as sRGB would be about 186, 70, 48: a duller red.
    expect(Math.max(Math.abs(r! - 200), Math.abs(g! - 60), Math.abs(b! - 40))).toBeLessThanOrEqual(4);
  });
});
