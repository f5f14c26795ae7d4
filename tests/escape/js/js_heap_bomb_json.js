// attack: JSON.parse of huge text
// category: js/exhaustion
// expect: kind=memory_limit
JSON.parse("[" + "1,".repeat(5e7) + "1]");
