const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * A text field of embedded metadata (EXIF, IPTC): UTF-8 when the bytes are valid UTF-8, which is
 * what tools write in practice whatever the standard says, else read as `otherwise`.
 */
export function metadataText(bytes: Buffer, otherwise: 'latin1' | 'utf8' = 'latin1'): string {
  try {
    return utf8.decode(bytes);
  } catch {
    return bytes.toString(otherwise);
  }
}
