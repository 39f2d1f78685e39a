import { describe, expect, it } from 'vitest';
import { decodeUtf8, firstDuplicateKey, invalidUtf8Offset } from '../../src/common/text-file';

describe('invalidUtf8Offset', () => {
  const bytes = (...b: number[]) => Uint8Array.from(b);

  it('accepts UTF-8 of every length, including 4-byte code points', () => {
    expect(invalidUtf8Offset(Buffer.from('aé€𝄞 z', 'utf8'))).toBeUndefined();
    expect(invalidUtf8Offset(bytes())).toBeUndefined();
  });

  it('finds the first bad byte: stray continuation, overlong form, surrogate, past U+10FFFF, cut short', () => {
    expect(invalidUtf8Offset(bytes(0x61, 0x80))).toBe(1); // a continuation byte with no lead
    expect(invalidUtf8Offset(bytes(0x61, 0xc0, 0xaf))).toBe(1); // overlong '/'
    expect(invalidUtf8Offset(bytes(0xe0, 0x80, 0xaf))).toBe(0); // overlong 3-byte form
    expect(invalidUtf8Offset(bytes(0x61, 0x62, 0xed, 0xa0, 0x80))).toBe(2); // U+D800, a surrogate
    expect(invalidUtf8Offset(bytes(0xf4, 0x90, 0x80, 0x80))).toBe(0); // U+110000
    expect(invalidUtf8Offset(bytes(0x61, 0xe2, 0x82))).toBe(1); // '€' cut short at the end
    expect(invalidUtf8Offset(bytes(0x43, 0x61, 0x66, 0xe9, 0x20))).toBe(3); // Latin-1 'é'
  });

  it('agrees with the strict decoder on random bytes', () => {
    let seed = 7;
    const next = () => ((seed = (seed * 1103515245 + 12345) >>> 0) >>> 16) & 0xff;
    for (let n = 0; n < 2000; n++) {
      const b = Uint8Array.from({ length: 1 + (n % 9) }, next);
      let strictOk = true;
      try {
        new TextDecoder('utf-8', { fatal: true }).decode(b);
      } catch {
        strictOk = false;
      }
      expect(invalidUtf8Offset(b) === undefined, Buffer.from(b).toString('hex')).toBe(strictOk);
    }
  });

  it('decodeUtf8 names where the bad byte is', () => {
    expect(() => decodeUtf8(Buffer.from([0x61, 0x0a, 0x62, 0xff]), 'data file x.json')).toThrow('data file x.json: byte 3 (line 2) is not UTF-8 (bytes 0xff); the file must be UTF-8');
    expect(decodeUtf8(Buffer.from('\ufeff{"a": 1}', 'utf8'), 'x')).toBe('{"a": 1}');
  });
});

describe('firstDuplicateKey', () => {
  it('finds a key given twice in one object, at any depth, with both lines', () => {
    expect(firstDuplicateKey('{"a": 1,\n "b": {"x": 1, "y": [{"k": 1, "k": 2}]}}')).toEqual({ key: 'k', firstLine: 2, line: 2, path: 'b.y' });
    expect(firstDuplicateKey('{"dev": {\n"q1": {},\n"q2": {},\n"q1": {}}}')).toEqual({ key: 'q1', firstLine: 2, line: 4, path: 'dev' });
  });

  it('does not count equal keys of different objects, values that look like keys, or escapes as different keys', () => {
    expect(firstDuplicateKey('[{"id": 1}, {"id": 2}]')).toBeUndefined();
    expect(firstDuplicateKey('{"a": "a", "b": ["a", "a"], "c": {"a": {"a": 1}}}')).toBeUndefined();
    expect(firstDuplicateKey('{"say \\"hi\\"": 1, "x": "}{,\\\\"}')).toBeUndefined();
    expect(firstDuplicateKey('{"A": 1, "\\u0041": 2}')).toMatchObject({ key: 'A' });
  });
});
