import { readIptcRights } from './iptcRights';

const dataset = (record: number, id: number, value: Buffer | string) => {
  const v = typeof value === 'string' ? Buffer.from(value, 'utf8') : value;
  return Buffer.concat([Buffer.from([0x1c, record, id, v.length >> 8, v.length & 0xff]), v]);
};

/** Photoshop's image resources as a JPEG's APP13 carries them, with the IIM block among others. */
function photoshopBlock(iim: Buffer, name = ''): Buffer {
  const resource = (id: number, data: Buffer, resourceName: string) => {
    const nameField = Buffer.concat([Buffer.from([resourceName.length]), Buffer.from(resourceName, 'latin1')]);
    const size = Buffer.alloc(4);
    size.writeUInt32BE(data.length);
    return Buffer.concat([Buffer.from('8BIM'), Buffer.from([id >> 8, id & 0xff]), nameField, Buffer.alloc(nameField.length % 2), size, data, Buffer.alloc(data.length % 2)]);
  };
  return Buffer.concat([Buffer.from('Photoshop 3.0\0', 'latin1'), resource(0x03ed, Buffer.alloc(16, 1), 'res'), resource(0x0404, iim, name)]);
}

describe('rights from an IPTC-IIM block', () => {
  it('reads By-line (all of them) and Copyright Notice from Photoshop\'s IPTC resource, in UTF-8', () => {
    const iim = Buffer.concat([dataset(1, 90, '\x1b%G'), dataset(2, 5, 'Title'), dataset(2, 80, 'Ansel Adams'), dataset(2, 80, 'Assistant'), dataset(2, 116, '© The Ansel Adams Trust')]);
    expect(readIptcRights(photoshopBlock(iim))).toEqual({ byline: 'Ansel Adams; Assistant', copyright: '© The Ansel Adams Trust' });
    expect(readIptcRights(photoshopBlock(iim, 'odd'))).toEqual({ byline: 'Ansel Adams; Assistant', copyright: '© The Ansel Adams Trust' });
  });

  it('reads Latin-1 values when the block declares no character set and they are not UTF-8', () => {
    const iim = Buffer.concat([dataset(2, 80, Buffer.from('Zoë Müller', 'latin1')), dataset(2, 116, Buffer.from('© Agence', 'latin1'))]);
    expect(readIptcRights(iim)).toEqual({ byline: 'Zoë Müller', copyright: '© Agence' });
  });

  it('skips an extended dataset and stops at a truncated one without throwing', () => {
    const extended = Buffer.concat([Buffer.from([0x1c, 2, 202, 0x80, 0x04, 0, 0, 0, 3]), Buffer.from('abc')]);
    expect(readIptcRights(Buffer.concat([extended, dataset(2, 80, 'After Extended')]))).toEqual({ byline: 'After Extended', copyright: null });
    const whole = Buffer.concat([dataset(2, 80, 'Kept'), dataset(2, 116, 'Cut short')]);
    expect(readIptcRights(whole.subarray(0, whole.length - 3))).toEqual({ byline: 'Kept', copyright: null });
    const block = photoshopBlock(whole);
    expect(readIptcRights(block.subarray(0, block.length - 5))).toEqual({ byline: null, copyright: null });
    expect(readIptcRights(Buffer.from('Photoshop 3.0\0garbage', 'latin1'))).toEqual({ byline: null, copyright: null });
    expect(readIptcRights(undefined)).toEqual({ byline: null, copyright: null });
  });
});
