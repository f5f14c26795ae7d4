// attack: throw a Symbol, whose conversion to text fails in the engine's error path
// category: js/hostile values
// expect: kind=error
throw Symbol("no text");
