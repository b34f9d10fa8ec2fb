import Tern

print("Tern demo")
