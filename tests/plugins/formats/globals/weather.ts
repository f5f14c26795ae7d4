globalThis.manifest = {
  egress: ["127.0.0.1:__PORT__"],
};

globalThis.tools.get_forecast = {
  description: "Get tomorrow's temperature range for a latitude/longitude. Use when the user asks about weather.",
  parameters: {
    type: "object",
    properties: {
      latitude: { type: "number", description: "Decimal degrees, north positive" },
      longitude: { type: "number", description: "Decimal degrees, east positive" },
    },
    required: ["latitude", "longitude"],
  },
  handler: async (input: { latitude: number; longitude: number }) => {
    const response = await host.fetch({
      url:
        "http://127.0.0.1:__PORT__/v1/forecast" +
        `?latitude=${input.latitude}&longitude=${input.longitude}` +
        "&daily=temperature_2m_max,temperature_2m_min&forecast_days=2",
    });
    if (response.status !== 200) throw new Error(`forecast service returned ${response.status}`);
    const daily = JSON.parse(response.body).daily;
    return { minC: daily.temperature_2m_min[1], maxC: daily.temperature_2m_max[1] };
  },
};

globalThis.tools.elsewhere = {
  description: "Fetches a host the egress list does not name.",
  handler: async () => (await host.fetch({ url: "http://127.0.0.2:__PORT__/" })).status,
};

globalThis.tools.host_member = {
  description: "Reads one member of host by name.",
  parameters: { type: "object", properties: { name: { type: "string" } }, required: ["name"] },
  handler: ({ name }: { name: string }) => {
    try {
      return typeof (host as Record<string, unknown>)[name];
    } catch (e) {
      return (e as Error).message;
    }
  },
};

globalThis.tools.settings = {
  description: "Returns host.settings and a random id.",
  handler: () => ({ settings: host.settings, id: host.crypto.randomUUID().length, log: host.log("logged"), nothing: undefined }),
};
