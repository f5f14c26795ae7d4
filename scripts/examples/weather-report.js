// Ask for two forecasts at once, keep what matters, and say what happened.
const cities = ["Oslo", "Rome", "Lima"];
const forecasts = await Promise.all(cities.map((city) => tools.weather.forecast({ city })));
const warmest = forecasts.reduce((a, b) => (b.high_c > a.high_c ? b : a));
console.log(`asked for ${forecasts.length} forecasts`);
const spread = await tools.math.add({ a: warmest.high_c, b: -Math.min(...forecasts.map((f) => f.low_c)) });
return { warmest: warmest.city, high_c: warmest.high_c, spread_c: Number(spread) };
