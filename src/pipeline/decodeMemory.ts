import type { ImageType } from './analyse';
import { jpegFrame } from './jpegStructure';

/**
 * Bytes a thumbnail's decode holds at its peak per pixel of the image, over 4 (the budget's
 * unit, CRAWL_MAX_DECODE_PIXELS, counts pixels of 4 bytes). Measured as the peak RSS of one
 * thumbnail of a 25-megapixel image over the process's own (sharp 0.34.5, libvips 8.17.3): AVIF
 * 15.6-18.8 bytes a pixel (decoded whole by libheif and aom; 10 megapixels took the same per
 * pixel), an interlaced PNG 5 (8-bit RGBA) and 9.8 (16-bit), decoded whole rather than row by
 * row; GIF 5.4; a progressive JPEG 3.1-8.1 (below). A baseline JPEG (decoded at 1/8 scale), a
 * non-interlaced PNG, WebP and TIFF took 0.4-1.6: they count as 4, as every image did before.
 */
const HEIF_FACTOR = 5;
/**
 * A progressive JPEG's coefficients, 2 bytes a sample, are kept whole: 3.1-3.3 bytes a pixel
 * with 4:2:0 chroma (1.5 samples a pixel), 6.0 with 4:4:4 and 8.1 for CMYK (3 and 4 samples).
 */
const PROGRESSIVE_JPEG_BYTES_PER_SAMPLE = 2.1;
const INTERLACED_PNG_FACTOR_PER_SAMPLE_BYTE = 1.25;
const GIF_FACTOR = 1.4;

/**
 * The weight of the image's thumbnail in the worker's decode budget: its pixels, times how much
 * more than 4 bytes a pixel its format's decode holds. A source of large AVIFs counted at 4
 * bytes a pixel would have run four 100-megapixel decodes of ~1.9 GB each at once.
 */
export function decodeWeight(body: Buffer, image: { format: ImageType; width: number; height: number }): number {
  return Math.ceil(image.width * image.height * decodeFactor(body, image.format));
}

function decodeFactor(body: Buffer, format: ImageType): number {
  if (format === 'avif' || format === 'heif') return HEIF_FACTOR;
  if (format === 'gif') return GIF_FACTOR;
  if (format === 'jpeg') {
    const frame = jpegFrame(body);
    if (!frame?.progressive || frame.width * frame.height === 0) return 1;
    const samplesPerPixel = (frame.total * 64) / (frame.width * frame.height);
    return Math.max(1, (PROGRESSIVE_JPEG_BYTES_PER_SAMPLE * samplesPerPixel) / 4);
  }
  if (format === 'png') {
    // IHDR comes first: bit depth at byte 24, interlace method at byte 28.
    const interlaced = body.length > 28 && body.toString('latin1', 12, 16) === 'IHDR' && body[28] === 1;
    return interlaced ? Math.max(1, INTERLACED_PNG_FACTOR_PER_SAMPLE_BYTE * (body[24]! > 8 ? 2 : 1)) : 1;
  }
  return 1;
}
