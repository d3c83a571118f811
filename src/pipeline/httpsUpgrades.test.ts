import { HttpsUpgrades, UPGRADE_AFTER } from './httpsUpgrades';

describe('learning that an http origin moved to https', () => {
  const moved = (u: HttpsUpgrades, n: number, from = 'http://old.example', to = 'https://old.example') => {
    for (let i = 0; i < n; i++) u.noteAnswer(`${from}/img/${i}.jpg?s=1`, 301, `${to}/img/${i}.jpg?s=1`);
  };

  it('asks over https after three permanent redirects in a row to the same URL there, keeping path and query', () => {
    const u = new HttpsUpgrades();
    moved(u, UPGRADE_AFTER - 1);
    expect(u.upgrade('http://old.example/a.jpg')).toBe('http://old.example/a.jpg');
    u.noteAnswer('http://old.example/x.png', 308, 'https://old.example/x.png');
    expect(u.upgrade('http://old.example/a%20b.jpg?w=1&h=2')).toBe('https://old.example/a%20b.jpg?w=1&h=2');
    expect(u.upgraded('http://old.example/a.jpg')).toBe(true);
    // Other origins, and https URLs, as they are.
    expect(u.upgrade('http://other.example/a.jpg')).toBe('http://other.example/a.jpg');
    expect(u.upgrade('http://old.example:8080/a.jpg')).toBe('http://old.example:8080/a.jpg');
    expect(u.upgrade('https://old.example/a.jpg')).toBe('https://old.example/a.jpg');
  });

  it('keeps the ports the redirects named', () => {
    const u = new HttpsUpgrades();
    moved(u, 3, 'http://127.0.0.1:8080', 'https://127.0.0.1:8443');
    expect(u.upgrade('http://127.0.0.1:8080/p/q.jpg')).toBe('https://127.0.0.1:8443/p/q.jpg');
  });

  it('learns nothing from temporary redirects, other paths or hosts, or a redirect back to http', () => {
    const u = new HttpsUpgrades();
    for (let i = 0; i < 5; i++) {
      u.noteAnswer(`http://a.example/${i}.jpg`, 302, `https://a.example/${i}.jpg`);
      u.noteAnswer(`http://b.example/${i}.jpg`, 301, `https://b.example/images/${i}.jpg`);
      u.noteAnswer(`http://c.example/${i}.jpg`, 301, `https://cdn.c.example/${i}.jpg`);
      u.noteAnswer(`http://d.example/${i}.jpg`, 301, `http://d.example/${i}.jpg?v=2`);
      u.noteAnswer(`http://e.example/${i}.jpg?x=1`, 301, `https://e.example/${i}.jpg`);
    }
    for (const h of ['a', 'b', 'c', 'd', 'e']) expect(u.upgrade(`http://${h}.example/z.jpg`)).toBe(`http://${h}.example/z.jpg`);
  });

  it('starts counting again after any other answer from the http origin', () => {
    const u = new HttpsUpgrades();
    moved(u, 2);
    u.noteAnswer('http://old.example/still-here.jpg', 200);
    moved(u, 2);
    expect(u.upgraded('http://old.example/a.jpg')).toBe(false);
    moved(u, 1);
    expect(u.upgraded('http://old.example/a.jpg')).toBe(true);
  });
});
