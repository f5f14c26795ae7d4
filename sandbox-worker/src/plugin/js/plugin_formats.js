// The seed systems' tool formats, each read as its authors wrote it and turned into
// codemode's tool registrations. `plugin.js` loads the layout's modules (Rust found them,
// `plugin-format` crate) and hands their namespaces to the format's adapter here with a
// toolkit: `register(spec)` adds one tool, `note(text)` reports something the format
// asks for that codemode does not honour, `refuse(text)` stops the load, and
// `unoffered(name)` is what a member codemode cannot offer throws when it is touched.
//
// | format | module | tool fields mapped |
// |---|---|---|
// | manifest (000) | `activate(api)` / `runPlugin` | through `api.tools.register` (plugin.js) |
// | zhin (001) | `tools/<name>/index.ts` (and `skills/<s>/tools/...`, `agents/<a>/tools/...`) default `defineAgentTool({...})` | description, inputSchema, requiresApproval, hidden, execute(input, context); the owner of a private tool |
// | plico (002) | `tools/*.tool.ts` default `defineTool({...})` | name, description, inputSchema, capabilities, approval, handler(input, ctx) |
// | globals (003) | `globalThis.tools.<name>` | description, parameters, handler(input) (plugin.js collects them) |
// | podcode (004) | default `{ id, server(input, { config }) }` | id, description, parameters, execute(args, ctx), idempotent, truncation |
//
// A module of the bundle step (`build.rs`), before `plugin.js`; imports nothing and
// exports one object, `formats`.
const formats = (function () {
  const {
    ArrayIsArray,
    ArrayPrototypeIncludes,
    ArrayPrototypeJoin,
    ArrayPrototypePush,
    Error: ErrorCtor,
    ObjectDefineProperty,
    ObjectFreeze,
    ObjectKeys,
    ReflectApply,
    SafeSet,
    SetPrototypeAdd,
    SetPrototypeHas,
    String: StringCtor,
    StringPrototypeIndexOf,
    StringPrototypeSlice,
    StringPrototypeStartsWith,
    StringPrototypeTrim,
    TypeError: TypeErrorCtor,
  } = primordials;

  /** An object whose `names` each throw `codemode does not offer <prefix>.<name>` when read. */
  function withUnoffered(target, prefix, names, unoffered) {
    for (let i = 0; i < names.length; i++) {
      const name = names[i];
      ObjectDefineProperty(target, name, { get: () => unoffered(`${prefix}.${name}`), enumerable: false });
    }
    return target;
  }

  function isObject(value) {
    return value !== null && typeof value === "object";
  }

  function requireText(value, where) {
    if (typeof value !== "string" || StringPrototypeTrim(value) === "") {
      throw new TypeErrorCtor(`${where} is required: say what the tool does and when to use it`);
    }
    return value;
  }

  // ------------------------------------------------------------ zhin (001)
  /** Context members of zhin's capability context that codemode has nothing behind. */
  const ZHIN_UNOFFERED = ["use", "generation", "origin", "principal", "policy", "question", "$client"];
  const ZHIN_APPROVALS = ["never", "on-risk", "once", "always"];
  const ZHIN_RESTRICTIONS = ["platforms", "scopes", "permissions"];

  function zhin(entries, kit) {
    for (let i = 0; i < entries.length; i++) {
      const { module, tool: name, namespace, owner } = entries[i];
      const where = `${module}`;
      const def = namespace.default;
      if (!isObject(def)) {
        kit.refuse(`${where} must default-export defineAgentTool({ description, inputSchema, execute })`);
        continue;
      }
      if (typeof def.execute !== "function") {
        kit.refuse(`${where}: \`execute\` must be a function (input, context) => result`);
        continue;
      }
      requireText(def.description, `${where}: \`description\``);
      const approval = def.requiresApproval === undefined ? "on-risk" : def.requiresApproval;
      if (!ArrayPrototypeIncludes(ZHIN_APPROVALS, approval)) {
        kit.refuse(`${where}: \`requiresApproval\` must be one of ${ArrayPrototypeJoin(ZHIN_APPROVALS, ", ")}`);
        continue;
      }
      // Access restrictions codemode cannot check: the tool would reach everyone, so it
      // is left out (fail closed), by name.
      let restricted = false;
      for (let r = 0; r < ZHIN_RESTRICTIONS.length; r++) {
        const field = ZHIN_RESTRICTIONS[r];
        if (ArrayIsArray(def[field]) && def[field].length > 0) {
          kit.note(`tool ${name} (${where}) is not offered: \`${field}\` restricts who may call it, and codemode has no ${field === "permissions" ? "permits" : field} to check; remove \`${field}\` to offer it to every agent`);
          restricted = true;
        }
      }
      if (restricted) continue;
      const destructive = !!(isObject(def.annotations) && def.annotations.destructiveHint === true);
      const execute = def.execute;
      kit.register({
        name,
        where,
        description: def.description,
        input: def.inputSchema,
        inputWhere: `tool ${name}: inputSchema`,
        annotations: def.annotations,
        approval: approval === "on-risk" ? (destructive ? "always" : "never") : approval,
        hidden: def.hidden === true,
        // A tool private to a skill or an agent: its owner's folder (declared once a
        // session loads that skill or selects that agent).
        owner,
        run: (input, call) => {
          // zhin.js reads `context.config` as values and as `config.get()`.
          const values = kit.settingsObject();
          const config = ObjectFreeze({ ...values, get: () => values });
          const context = withUnoffered({ config, owner: kit.plugin, signal: call.signal }, "context", ZHIN_UNOFFERED, kit.unoffered);
          return ReflectApply(execute, def, [input, ObjectFreeze(context)]);
        },
      });
    }
  }

  // ----------------------------------------------------------- plico (002)
  const PLICO_RESERVED = ["list_files", "read_file", "write_file", "edit_file", "load_skill"];

  function plico(entries, kit) {
    const seen = new SafeSet();
    for (let i = 0; i < entries.length; i++) {
      const { module, namespace } = entries[i];
      const def = namespace.default;
      if (!isObject(def)) {
        kit.refuse(`${module} must default-export defineTool({ name, description, inputSchema, capabilities, approval, handler })`);
        continue;
      }
      const where = `${module}`;
      if (typeof def.name !== "string") {
        kit.refuse(`${where}: \`name\` must be a string`);
        continue;
      }
      if (ArrayPrototypeIncludes(PLICO_RESERVED, def.name)) {
        kit.refuse(`${where}: the name ${def.name} is reserved (${ArrayPrototypeJoin(PLICO_RESERVED, ", ")}); choose another`);
        continue;
      }
      if (SetPrototypeHas(seen, def.name)) {
        kit.refuse(`${where}: another .tool file already declares a tool named ${def.name}; names are unique across the project`);
        continue;
      }
      SetPrototypeAdd(seen, def.name);
      if (typeof def.handler !== "function") {
        kit.refuse(`${where}: \`handler\` must be a function (input, ctx) => result`);
        continue;
      }
      if (!ArrayIsArray(def.capabilities)) {
        kit.refuse(`${where}: \`capabilities\` is required, a list of labels for what the tool touches (for example ["ticket:write"], or [])`);
        continue;
      }
      if (!isObject(def.approval) || typeof def.approval.required !== "boolean") {
        kit.refuse(`${where}: \`approval\` is required: { required: false }, or { required: true, reason: "..." }`);
        continue;
      }
      requireText(def.description, `${where}: \`description\``);
      const handler = def.handler;
      kit.register({
        name: def.name,
        where,
        description: def.description,
        input: def.inputSchema,
        inputWhere: `tool ${def.name}: inputSchema`,
        approval: def.approval.required ? "always" : "never",
        approvalReason: typeof def.approval.reason === "string" ? def.approval.reason : undefined,
        meta: { capabilities: def.capabilities },
        run: (input, call) => {
          const ctx = withUnoffered(
            { context: call.hostContext, signal: call.signal, idempotencyKey: call.idempotencyKey },
            "ctx",
            ["artifacts"],
            kit.unoffered,
          );
          return ReflectApply(handler, def, [input, ObjectFreeze(ctx)]);
        },
      });
    }
  }

  // --------------------------------------------------------- podcode (004)
  /** Podcode's ToolContext members with nothing behind them here. */
  const PODCODE_UNOFFERED = ["messages", "recordChange"];

  async function podcode(entries, kit) {
    const { module, namespace } = entries[0];
    const plugin = namespace.default;
    if (!isObject(plugin) || typeof plugin.server !== "function") {
      kit.refuse(`${module} must default-export { id, server(input, { config }) } whose hooks include \`tool\``);
      return;
    }
    const hooks = await plugin.server(ObjectFreeze({}), ObjectFreeze({ config: kit.settingsObject() }));
    if (!isObject(hooks) || hooks.tool === undefined) {
      kit.refuse(`${module}: server() returned no \`tool\` hook, so the plugin offers no tools`);
      return;
    }
    const defs = typeof hooks.tool === "function" ? await hooks.tool() : hooks.tool;
    if (!ArrayIsArray(defs)) {
      kit.refuse(`${module}: the \`tool\` hook must return a list of tool definitions`);
      return;
    }
    for (let i = 0; i < defs.length; i++) {
      const def = defs[i];
      const where = `${module}: tool ${isObject(def) ? def.id : i}`;
      if (!isObject(def) || typeof def.id !== "string") {
        kit.refuse(`${where}: each tool needs an \`id\``);
        continue;
      }
      if (typeof def.execute !== "function") {
        kit.refuse(`${where}: \`execute\` must be a function (args, ctx) => result`);
        continue;
      }
      requireText(def.description, `${where}: \`description\``);
      if (def.parameters === undefined) {
        kit.refuse(`${where}: \`parameters\` is required, a zod schema`);
        continue;
      }
      if (def.truncation !== undefined) {
        kit.note(`tool ${def.id}: \`truncation\` is not honoured: codemode hands the whole output to the program, which keeps what it needs`);
      }
      const execute = def.execute;
      kit.register({
        name: def.id,
        where,
        description: def.description,
        input: def.parameters,
        inputWhere: `tool ${def.id}: parameters`,
        annotations: def.idempotent === true ? { readOnlyHint: true, idempotentHint: true } : undefined,
        shape: podcodeResult,
        run: (args, call) => {
          const ctx = withUnoffered(
            {
              sessionID: call.base.chatId,
              messageID: undefined,
              callID: call.base.callId,
              parentID: undefined,
              rootID: undefined,
              agent: call.base.agentId,
              mainCwd: call.base.workspace,
              abort: call.signal,
              metadata: () => {},
              ask: async (request) => {
                const permission = isObject(request) ? StringCtor(request.permission) : "this";
                const patterns = isObject(request) && ArrayIsArray(request.patterns) ? request.patterns : [];
                const message = `Allow tool ${def.id} the "${permission}" permission${patterns.length ? ` for ${ArrayPrototypeJoin(patterns, ", ")}` : ""}?`;
                const answer = await call.ask(message, { permission, patterns, metadata: isObject(request) ? request.metadata : undefined });
                if (!answer.approved) {
                  throw new ErrorCtor(`the person did not allow ${permission}${answer.reason ? `: ${answer.reason}` : ""}`);
                }
              },
            },
            "ctx",
            PODCODE_UNOFFERED,
            kit.unoffered,
          );
          return ReflectApply(execute, def, [args, ObjectFreeze(ctx)]);
        },
      });
    }
  }

  /** A Podcode result as an MCP result: `output` is what the model reads; attachments are content. */
  function podcodeResult(result) {
    if (!isObject(result) || ArrayIsArray(result) || result.content !== undefined) return result;
    const content = [{ type: "text", text: typeof result.output === "string" ? result.output : StringCtor(result.output ?? "") }];
    const attachments = ArrayIsArray(result.attachments) ? result.attachments : [];
    for (let i = 0; i < attachments.length; i++) {
      const a = attachments[i];
      if (!isObject(a) || typeof a.url !== "string") continue;
      const comma = StringPrototypeIndexOf(a.url, ",");
      if (StringPrototypeStartsWith(a.url, "data:") && comma > 0 && StringPrototypeIndexOf(StringPrototypeSlice(a.url, 0, comma), ";base64") > 0) {
        const mimeType = typeof a.mime === "string" ? a.mime : StringPrototypeSlice(a.url, 5, StringPrototypeIndexOf(a.url, ";"));
        const kind = StringPrototypeStartsWith(mimeType, "image/") ? "image" : StringPrototypeStartsWith(mimeType, "audio/") ? "audio" : null;
        const data = StringPrototypeSlice(a.url, comma + 1);
        ArrayPrototypePush(content, kind ? { type: kind, data, mimeType } : { type: "resource", resource: { uri: "attachment:" + i, mimeType, blob: data } });
      } else {
        ArrayPrototypePush(content, { type: "resource_link", uri: a.url, name: a.url, mimeType: typeof a.mime === "string" ? a.mime : undefined });
      }
    }
    const meta = result.title !== undefined || result.metadata !== undefined ? { podcode: { title: result.title, metadata: result.metadata } } : undefined;
    return { content, _meta: meta };
  }

  // --------------------------------------------------------- globals (003)
  /** The members of seed 003's `host` that codemode has nothing behind. */
  const HOST_UNOFFERED = ["session", "workspace", "agents", "models", "llm", "decide", "media"];

  /** Seed 003's `host` global (defined before the script runs). */
  function makeHost(kit) {
    const host = {
      fetch: async (request) => {
        if (!isObject(request) || typeof request.url !== "string") throw new TypeErrorCtor("host.fetch takes { url, method?, headers?, body? }");
        const response = await kit.fetch(request.url, { method: request.method, headers: request.headers, body: request.body, signal: request.signal });
        const headers = {};
        response.headers.forEach((value, name) => { headers[name] = value; });
        return { status: response.status, headers, body: await response.text() };
      },
      log: (...args) => kit.console.log(...args),
      crypto: kit.crypto,
    };
    ObjectDefineProperty(host, "settings", { get: () => kit.settingsObject(), enumerable: true });
    return ObjectFreeze(withUnoffered(host, "host", HOST_UNOFFERED, kit.unoffered));
  }

  return { zhin, plico, podcode, makeHost, withUnoffered, requireText, isObject, keysOf: ObjectKeys };
})();

export { formats };
