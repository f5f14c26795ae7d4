// attack: leave a promise rejected with a Symbol behind and return
// category: js/hostile values
// expect: kind=error
Promise.reject(Symbol("left behind"));
return 1;
