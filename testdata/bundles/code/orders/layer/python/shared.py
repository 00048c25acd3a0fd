def greeting(name):
    return "hello from " + name
