import sharp from 'sharp';

/**
 * A perceptual hash of an image (dHash: each of 8 rows of a 9x8 grey picture of it, one bit per
 * pair of neighbours, set where the left one is brighter), as 16 hex digits. The sha256 finds the
 * same bytes under two URLs; this finds the same picture saved twice, at another size or JPEG
 * quality, which a dataset built from many sites holds far more often. Two hashes within a few
 * bits of each other (the Hamming distance of their 64) are the same picture, in practice;
 * pictures of one flat colour all hash alike, as they look alike.
 *
 * It is made from the thumbnail, not the download: the thumbnail is already turned upright, in
 * sRGB and small, so hashing it decodes a few thousand pixels instead of the photo's millions.
 */
export async function differenceHash(thumbnail: Buffer): Promise<string> {
  const { data, info } = await sharp(thumbnail)
    .flatten({ background: '#ffffff' })
    .greyscale()
    .resize(9, 8, { fit: 'fill' })
    .raw()
    .toBuffer({ resolveWithObject: true });
  if (info.channels !== 1 || data.length !== 72) throw new Error(`differenceHash: expected 9x8 grey pixels, got ${info.width}x${info.height}x${info.channels}`);
  let hex = '';
  for (let row = 0; row < 8; row += 1) {
    let byte = 0;
    for (let x = 0; x < 8; x += 1) byte = (byte << 1) | (data[row * 9 + x]! > data[row * 9 + x + 1]! ? 1 : 0);
    hex += byte.toString(16).padStart(2, '0');
  }
  return hex;
}

/** How many of two hashes' 64 bits differ: 0 for the same picture, about 32 for unrelated ones. */
export function hashDistance(a: string, b: string): number {
  let bits = 0;
  for (let i = 0; i < a.length; i += 2) {
    let x = parseInt(a.slice(i, i + 2), 16) ^ parseInt(b.slice(i, i + 2), 16);
    for (; x; x &= x - 1) bits += 1;
  }
  return bits;
}
