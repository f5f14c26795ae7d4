// attack: throw an object whose toString never returns, so describing the failure spins
// category: js/hostile values
// expect: kind=cpu_limit
throw { toString() { for (;;) {} } };
