// parseIPv4 (api/validation/ipv4.ts): strict dotted quads only, one spelling per address.
import { formatIPv4, parseIPv4 } from '../../../api/validation/ipv4';

/** The rule as a regular expression, independent of the parser: four octets 0-255, no leading zero. */
const RULE = /^(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])(\.(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])){3}$/;

describe('parseIPv4', () => {
  test.each([
    ['0.0.0.0', 0],
    ['255.255.255.255', 0xffffffff],
    ['10.128.39.15', (10 << 24) + (128 << 16) + (39 << 8) + 15],
    ['192.0.2.1', 0xc0000201],
  ])('%s is %d, and formats back', (text, value) => {
    expect(parseIPv4(text)).toBe(value);
    expect(formatIPv4(value)).toBe(text);
  });

  test.each([
    '',
    '1.2.3',
    '1.2.3.4.5',
    '1..2.3',
    '.1.2.3',
    '1.2.3.',
    '256.0.0.1',
    '1.2.3.1000',
    '01.2.3.4',
    '00.1.2.3',
    '1.2.3.04',
    ' 1.2.3.4',
    '1.2.3.4 ',
    '1.2.3.0x1',
    '1.2.3.-1',
    '1.2.3.+1',
    '１.2.3.4',
  ])('%j is refused', (text) => {
    expect(parseIPv4(text)).toBeUndefined();
  });

  test('agrees with the rule on every 7-character string over 0, 1, 2, 5, 9 and the dot, and on each with a 5 appended', () => {
    const alphabet = ['0', '1', '2', '5', '9', '.'];
    let checked = 0;
    // Every string of 7 characters over the alphabet (6^7 = 279,936), and their 8-character
    // extensions by "5": lengths around the shortest quads.
    const walk = (prefix: string, left: number): void => {
      if (left === 0) {
        for (const text of [prefix, `${prefix}5`]) {
          const want = RULE.test(text) ? text.split('.').reduce((v, o) => v * 256 + Number(o), 0) : undefined;
          if (parseIPv4(text) !== want) throw new Error(`${JSON.stringify(text)}: ${parseIPv4(text)} != ${want}`);
          checked++;
        }
        return;
      }
      for (const c of alphabet) walk(prefix + c, left - 1);
    };
    walk('', 7);
    expect(checked).toBe(2 * 6 ** 7);
  });
});
